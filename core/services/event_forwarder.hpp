#pragma once
// Event webhooks (docs/sessions.md, "Event webhooks"): moves every committed event of
// a session with an event_webhook_url into the webhook outbox, a batch at a time, so
// the dispatcher delivers them as it delivers completion callbacks (signature, retries,
// SSRF check at connect, attempts recorded). The session's cursor (how far its events
// are in the outbox) moves in the same write job that inserts the batch: after a crash
// the forwarding resumes at the cursor, and every committed event is in exactly one
// outbox row (delivered at least once; receivers de-duplicate on the event ids).
//
// It reads the durable event log, never the live stream: only committed events go out,
// so an id the crash took back (never committed) is never sent. Polls every `interval`:
// a read job finds the sessions with events past their cursor (at most
// sessions_per_pass, round-robin by id), then one write job forwards up to
// max_events_per_delivery events of each. The store's queue never holds more than
// one forwarder job.
//
// Executor: its loop runs on the executor given to start(); it owns itself (the
// coroutine holds a shared_ptr) and ends at stop() or when that executor stops.
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace agw::core {

class clock;
class store_executor;

class event_forwarder : public std::enable_shared_from_this<event_forwarder> {
 public:
  static constexpr std::size_t sessions_per_pass = 64;

  // outbox_written: called (any thread) after a pass committed outbox rows (wakes the dispatcher).
  event_forwarder(store_executor& store, const clock& time, std::chrono::milliseconds interval,
                  std::function<void()> outbox_written);

  void start(boost::asio::any_io_executor executor);
  void stop() { stopped_ = true; }

  // One pass over (at most sessions_per_pass of) the sessions; the rows written.
  boost::asio::awaitable<std::size_t> pass();

 private:
  boost::asio::awaitable<void> loop(std::shared_ptr<event_forwarder> self);

  store_executor& store_;
  const clock& clock_;
  std::chrono::milliseconds interval_;
  std::function<void()> outbox_written_;
  std::string after_id_;  // round-robin position; used by the loop's coroutine only
  std::atomic<bool> stopped_{false};
};

}  // namespace agw::core
