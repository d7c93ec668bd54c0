#pragma once
// A session's published events on their way to durability. Events queue here in
// id order; one batch at a time (at most `max_batch` events) goes to the event log
// writer, and whatever queues meanwhile forms the next. Only once a batch is
// committed is it handed to the owner (`released`), which puts it in the ring and
// delivers it: no client ever sees an id that a crash could take back. A batch the
// store refused keeps its ids and is sent again after a pause. The run that
// publishes waits while `high_watermark` events or more are uncommitted; nobody
// else ever waits. While the session is being deleted, batches are released
// without being stored (their rows are gone).
//
// A batch is sent no sooner than the owner's release_spacing() after the one sent
// before it (a timer holds it meanwhile), unless a whole batch (`max_batch`) waits: a
// release costs one write per follower, so a channel that many follow gets fewer,
// larger batches at full speed instead of one per storage round trip, whichever way
// the store writes them. A paced run's events, further apart than that, never wait.
//
// Executor: the owning channel's strand, for every method and completion. Not
// thread-safe.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/events/event_frame.hpp"
#include "core/histogram.hpp"
#include "core/io_executor.hpp"
#include "core/storage/event_log_writer.hpp"

namespace agw::core {

class commit_pipeline {
 public:
  struct options {
    std::size_t max_batch = 256;        // events per commit (and per delivery)
    std::size_t high_watermark = 4096;  // uncommitted events before the run waits
    std::size_t retention = 0;          // events the session keeps in its log; 0 = all
    // Observes, per batch sent to the store and committed, the seconds from its oldest
    // event's push to its release: the longest any of its events waited to be durable
    // (a deleted session's last batches, released unstored, are not). None: not measured.
    histogram* commit_wait = nullptr;
    std::string thread_id = {};  // the session's incarnation (event_log_writer::open)
  };
  // The channel: hears each committed batch, and keeps itself alive for completions.
  class owner {
   public:
    virtual ~owner() = default;
    virtual void released(const std::vector<frame_ptr>& batch) = 0;
    // The store refused a batch as fenced_out (another node took the session's run):
    // nothing more is written until unfence().
    virtual void on_fenced_out() = 0;
    virtual std::shared_ptr<const void> keep_alive() = 0;
    // The least time between two batches sent (zero: none); asked at each send.
    virtual std::chrono::steady_clock::duration release_spacing() const { return {}; }
  };

  commit_pipeline(io_strand strand, std::string session_id, event_log_writer& log, options opts, owner& to,
                  std::int64_t committed_id);

  // Queues the next event and sends a batch unless one is in flight.
  void push(frame_ptr event);
  // Waits until every event pushed so far is committed and released (or the pipeline closed).
  boost::asio::awaitable<void> wait_committed(std::int64_t id);
  // Waits while the high watermark of events (or more) await their commit.
  boost::asio::awaitable<void> wait_below_watermark();
  // Would wait_below_watermark() wait now? A run checks first and skips the coroutine
  // (its frame) on the usual path, where storage keeps up.
  bool above_watermark() const { return pending_.size() + in_flight_count_ >= opts_.high_watermark && !closed_ && !fenced_; }

  std::int64_t committed_id() const { return committed_id_; }
  bool idle() const { return pending_.empty() && !in_flight_; }
  // Idle only: the log holds events up to `last_id` written elsewhere (another node);
  // the next push must carry last_id + 1.
  void adopt(std::int64_t last_id);
  // Batches from now on carry the run's lease token (event_log_writer::batch::fence; 0: none).
  void set_fence(std::int64_t token) { fence_ = token; }
  std::int64_t fence() const { return fence_; }
  // The run's lease was taken (a fenced_out commit, or a renewal that found it gone):
  // what is queued is dropped, later pushes too, and every waiter is woken, until
  // unfence(). A batch already in flight still lands if the store took it.
  void fence_out();
  bool fenced() const { return fenced_; }
  // Idle only: takes pushes again, unfenced, numbering on from committed_id().
  void unfence() {
    fenced_ = false;
    fence_ = 0;
  }
  // From now on batches are released without being stored (the session is being deleted).
  void store_nothing() { unstored_ = true; }
  // Drops what is queued and wakes every waiter; later completions are ignored.
  void close();

 private:
  using time_point = std::chrono::steady_clock::time_point;
  void flush();
  // Holds the next batch until `due` (release_spacing), then flushes.
  void flush_at(time_point due);
  // `oldest`: the batch's oldest push, for a batch sent to the store (none: released unstored).
  void on_committed(const std::shared_ptr<std::vector<frame_ptr>>& batch, std::optional<time_point> oldest,
                    std::exception_ptr error);
  void retry_later(const std::shared_ptr<std::vector<frame_ptr>>& batch, time_point oldest, std::exception_ptr error);
  void drop_pending();
  static void wake(std::vector<std::shared_ptr<boost::asio::steady_timer>>& waiters);

  io_strand strand_;
  std::string session_id_;
  std::shared_ptr<event_log_writer::session_log> log_;  // the session's, opened once
  options opts_;
  owner& owner_;
  std::int64_t committed_id_;
  std::vector<frame_ptr> pending_;     // pushed, not yet handed to the writer
  std::vector<time_point> pushed_at_;  // when each of pending_ was pushed (real time: a latency metric)
  std::size_t in_flight_count_ = 0;    // events in the batch being committed
  bool in_flight_ = false;
  time_point last_sent_{};  // the last batch's send (release_spacing)
  bool spaced_ = false;     // a timer holds the next batch (flush_at)
  bool unstored_ = false;
  std::int64_t fence_ = 0;
  bool fenced_ = false;
  bool closed_ = false;
  std::vector<std::shared_ptr<boost::asio::steady_timer>> commit_waiters_;
  std::vector<std::shared_ptr<boost::asio::steady_timer>> watermark_waiters_;
};

}  // namespace agw::core
