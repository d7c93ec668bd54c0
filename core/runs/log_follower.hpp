#pragma once
// Followers of other nodes' runs read the log themselves (docs/scale-out.md, "Redis
// fan-out"): every tick, each channel of the process that has subscribers and no
// run of its own reads the events after its last committed id (one store read,
// through the store executor) and takes on what it finds (session_channel::follow_log).
// Fast (`fast`, e.g. 150 ms) while the fan-out is not live (Redis down, or just back),
// slow (`slow`, e.g. 1 s) while it is: the backstop for a message lost in flight.
// A tick starts only when every read of the previous one has completed, so a channel
// has at most one read in flight. Made only in a cluster (a fan-out configured).
//
// Executor: the timer's (any io executor); channel work on each channel's strand.
#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>

#include "core/io_executor.hpp"
#include "core/metrics.hpp"
#include "core/session_hub.hpp"
#include "core/storage/live_fanout.hpp"

namespace agw::core {

class log_follower : public std::enable_shared_from_this<log_follower> {
 public:
  struct options {
    std::chrono::milliseconds fast{150};   // while the fan-out is not live
    std::chrono::milliseconds slow{1000};  // while it is (a lost message's bound)
    std::size_t page = 256;                // events read per channel per tick
  };
  log_follower(io_executor executor, session_hub& hub, const live_fanout& fanout, metrics& stats, options opts);
  void start();
  void stop();
  // One pass now over every channel (tests); `done` runs once every read completed.
  void poll_once(std::function<void()> done = nullptr);

 private:
  void arm();

  boost::asio::steady_timer timer_;
  session_hub& hub_;
  const live_fanout& fanout_;
  metrics& stats_;
  options opts_;
  std::atomic<bool> stopped_{false};
};

}  // namespace agw::core
