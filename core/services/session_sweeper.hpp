#pragma once
// The TTL sweep (docs/sessions.md, "TTL"): every `interval`, sessions idle past their
// TTL (ttl_seconds, else GATEWAY_SESSION_TTL) are expired as DELETE removes them: rows
// deleted, then the live side told (session_hub::session_deleted: a live run is
// aborted, followers closed). A batch at a time: one read job finds at most
// `batch` candidates and one write job deletes those still idle when it runs
// (re-checked there: a message stored meanwhile keeps its session). A live run
// counts from its start (its user message is the activity): one going for longer
// than the TTL is aborted with its session. Another batch follows at once while
// batches come back full, so the store's queue never holds more than one sweep job.
// The delete job runs under sweep_lock::try_lead("session-ttl-sweep"): with several
// nodes on one PostgreSQL store, one node's batch at a time; a node that does not get
// the lock ends its pass (the next interval looks again).
//
// Executor: the loop runs on the executor given to start(); it owns itself (the
// coroutine holds a shared_ptr) and ends at stop() or when that executor stops.
// `time` is the sweep's clock: the process's, or a test's (GATEWAY_TEST_CLOCK_OFFSET_FILE).
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/session.hpp"

namespace agw::core {

class clock;
class session_hub;
class store_executor;
class store_connection;

class session_sweeper : public std::enable_shared_from_this<session_sweeper> {
 public:
  struct options {
    std::int64_t default_ttl_ms = 0;  // 0: only sessions with their own ttl_seconds expire
    std::chrono::milliseconds interval{60'000};
    std::size_t batch = 50;
  };
  // Called inside the delete job, on the store thread, for each expired session before
  // its rows go: what must commit with the expiry (its session.expired webhook row).
  using expiring_hook = std::function<void(store_connection&, const session_record&)>;
  // Called after the commit (any thread) with the number of sessions expired (the server
  // wakes the webhook dispatcher for the notices the expiring_hook wrote).
  using expired_hook = std::function<void(std::size_t)>;

  session_sweeper(store_executor& store, session_hub& hub, const clock& time, options opts, expiring_hook expiring = nullptr,
                  expired_hook expired = nullptr);

  void start(boost::asio::any_io_executor executor);
  void stop() { stopped_ = true; }

  // One sweep to the end (every full batch); the number of sessions expired. For tests.
  boost::asio::awaitable<std::size_t> sweep();

 private:
  boost::asio::awaitable<void> loop(std::shared_ptr<session_sweeper> self);
  boost::asio::awaitable<std::size_t> sweep_batch(bool& more);

  store_executor& store_;
  session_hub& hub_;
  const clock& clock_;
  options opts_;
  expiring_hook expiring_;
  expired_hook expired_;
  std::atomic<bool> stopped_{false};
};

}  // namespace agw::core
