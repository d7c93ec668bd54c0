#pragma once
// A survivor's sweep (docs/scale-out.md, "Run ownership"): every `interval` (about
// half a lease), leases whose holder stopped renewing them (its node was killed, cut
// off or stalled past the lease) are looked up; each is taken with the session's lease
// (only one node wins) and its run closed exactly as start-up repair does (partial
// content from the log, `error` + `done` after the log's last id, checkpoint and
// projection), in one store job per session; then `on_repaired` hears of it (the server
// lets its channel of that session follow the log).
//
// Executor: the loop runs on the executor given to start(); it owns itself (the
// coroutine holds a shared_ptr) and ends at stop() or when that executor stops.
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace agw::core {

class clock;
class store_executor;
struct metrics;

class run_takeover : public std::enable_shared_from_this<run_takeover> {
 public:
  struct options {
    std::string node_id;
    std::chrono::milliseconds lease{10'000};
    std::chrono::milliseconds interval{5'000};
    std::size_t batch = 32;
    // After a repair committed (any thread): the session and its last event id now.
    std::function<void(const std::string& session_id, std::int64_t last_id)> on_repaired;
  };

  run_takeover(store_executor& store, metrics& stats, const clock& time, options opts);

  void start(boost::asio::any_io_executor executor);
  void stop() { stopped_ = true; }

  // One sweep: the number of runs closed. For tests.
  boost::asio::awaitable<std::size_t> sweep();

 private:
  boost::asio::awaitable<void> loop(std::shared_ptr<run_takeover> self);

  store_executor& store_;
  metrics& stats_;
  const clock& clock_;
  options opts_;
  std::atomic<bool> stopped_{false};
};

}  // namespace agw::core
