#pragma once
// The loop that drops idle sessions' channels from memory (session_hub::evict_idle):
// every `idle_for` / 4 (at most every 10 s), channels quiet for `idle_for` go, so the
// process holds the sessions in use, not every session used since start-up.
//
// Executor: the loop runs on the executor given to start() and owns itself (the
// coroutine holds a shared_ptr); it ends at stop() or when that executor stops. The
// hub outlives it.
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>

namespace agw::core {

class clock;
class session_hub;

class channel_evictor : public std::enable_shared_from_this<channel_evictor> {
 public:
  channel_evictor(session_hub& hub, const clock& time, std::chrono::milliseconds idle_for);

  void start(boost::asio::any_io_executor executor);
  void stop() { stopped_ = true; }

 private:
  boost::asio::awaitable<void> loop(std::shared_ptr<channel_evictor> self);

  session_hub& hub_;
  const clock& clock_;
  std::chrono::milliseconds idle_for_;
  std::atomic<bool> stopped_{false};
};

}  // namespace agw::core
