#pragma once
// The live state of one session: its event sequence, the commit pipeline, the
// ring buffer, its subscribers and its live run.
//
// Executor: every method except snapshot() runs on the channel's strand, and
// the agent of the session's run runs on that same strand, so publishing an
// event is a plain call. snapshot() is thread-safe (a small mutex).
//
// The pipeline (docs/streaming.md): publish() assigns the next id, serializes
// the frame once and queues it; one batch per session is in flight to the event
// log writer at a time (whatever queued meanwhile forms the next batch); only when
// a batch is committed are its frames put in the ring and handed to subscribers.
// So no client ever sees an id that a crash could take back. How the store lays
// the events out is the writer's business (core/storage/event_log_writer.hpp).
//
// Its subscribers are cursors (subscriber_cursors.hpp): a slow reader catches up
// page by page from the ring or the log, costs one page of memory and never slows
// the run.
#include <algorithm>
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/json/object.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/events/event_buffer.hpp"
#include "core/events/event_source.hpp"
#include "core/events/subscriber.hpp"
#include "core/io_executor.hpp"
#include "core/metrics.hpp"
#include "core/runs/commit_pipeline.hpp"
#include "core/runs/subscriber_cursors.hpp"
#include "core/session.hpp"
#include "core/storage/event_log_writer.hpp"
#include "core/storage/live_fanout.hpp"
#include "core/store_executor.hpp"

namespace agw::core {

class run;

// What every channel of a process shares (all outlive the channels).
struct channel_services {
  store_executor& store;  // log reads for replays
  event_log_writer& log;  // event batches are made durable through it
  metrics& stats;
  // The other nodes, told of each committed batch (core/storage/live_fanout.hpp); null
  // on a single node, where a batch costs nothing more.
  live_fanout* fanout = nullptr;
};

class session_channel : public std::enable_shared_from_this<session_channel>,
                        private commit_pipeline::owner,
                        private subscriber_cursors::source {
 public:
  using strand_type = io_strand;

  struct options {
    std::size_t ring_size = 100;
    std::size_t high_watermark = 4096;      // uncommitted events before the run waits
    std::size_t replay_page = 256;          // events per page handed to a subscriber that catches up
    std::size_t subscriber_backlog = 8192;  // a subscriber's untaken frames past which it catches up instead
    std::size_t retention = 0;              // events kept in the log per session; 0 = all
    std::size_t max_batch = 256;            // events per commit (and per delivery)
    // The least time between two batches the channel sends to the store (and so, about,
    // between its releases), per subscriber: a release is one write per follower, so one
    // to 1,000 followers costs milliseconds of io-thread time, and at full speed they
    // would otherwise get one per storage round trip (commit_pipeline). Subscribers that
    // are catching up count too (they are few, and soon live again).
    std::chrono::nanoseconds release_spacing_per_subscriber{4000};
    std::string thread_id = {};  // the session's (tells it from one made again with its id)
  };

  session_channel(io_executor executor, std::string session_id, std::int64_t last_event_id, const channel_services& services,
                  options opts);

  strand_type& strand() { return strand_; }
  const std::string& session_id() const { return session_id_; }
  const std::string& thread_id() const { return opts_.thread_id; }
  store_executor& store() { return store_; }

  // --- on the strand ---
  // Assigns the next id and queues the frame for commit; returns the id.
  std::int64_t publish(std::string_view run_id, event_type type, const boost::json::object& data,
                       event_source source = event_source::ai_agent);
  // The same for data with one string member ({"status": ...}, {"content": ...}).
  std::int64_t publish(std::string_view run_id, event_type type, std::string_view key, std::string_view value,
                       event_source source = event_source::ai_agent);
  // An event of no run (a custom event, a message while no agent answers): its data is
  // {"run_id": null, "source": source, ...data's members}.
  std::int64_t publish_outside_run(event_type type, event_source source, const boost::json::object& data);
  // Waits until every event published so far is committed and released.
  boost::asio::awaitable<void> wait_committed();
  // Waits while the high watermark of events (or more) await their commit: the
  // pipeline's own coroutine, not one wrapping it (one frame less per wait).
  boost::asio::awaitable<void> wait_below_watermark() { return pipeline_.wait_below_watermark(); }
  // Whether wait_below_watermark() would wait now.
  bool above_watermark() const { return pipeline_.above_watermark(); }

  // Sends every event after `after_id` (ring or log) and then live events.
  // on_replay is called (on the strand) once the replay is known, before its frames.
  // A subscriber joins once until it leaves (std::logic_error otherwise).
  void subscribe(std::shared_ptr<subscriber> sub, std::int64_t after_id,
                 std::function<void(const replay_info&)> on_replay = nullptr);
  void unsubscribe(const subscriber* sub);
  std::size_t subscriber_count() const { return cursors_.size(); }

  // Committed events after `after_id`, at most `limit`, from memory or the log
  // (the JSON cursor). Runs on the strand (co_spawn it there).
  boost::asio::awaitable<std::vector<frame_ptr>> read_after(std::int64_t after_id, std::size_t limit);

  std::int64_t last_assigned_id() const { return next_id_ - 1; }
  std::int64_t last_committed_id() const { return pipeline_.committed_id(); }

  // Another node committed this session's events up to `last_id` (docs/scale-out.md):
  // the channel moves its sequence there, so its subscribers get those events and a run
  // started here later numbers on from them. `frames`, when the fan-out carried them,
  // are those events: taken as they are when they follow on from what this channel holds
  // (delivered like a local commit); otherwise the subscribers read the gap from the log.
  // Nothing happens while this channel has events of its own on their way (it is the
  // session's writer; a writer whose lease was taken is stopped by fencing instead) or
  // when `last_id` is not past what it holds. Returns whether the channel moved.
  bool follow_log(std::int64_t last_id, std::vector<frame_ptr> frames = {});
  // follow_log up to the log's end as the store says now: a client resuming here with
  // an id it saw on another node, before this node heard of it. One store read; a store
  // error leaves the channel as it was. Runs on the strand (co_spawn it there).
  boost::asio::awaitable<void> follow_log_end();
  // What the fan-out heard from another node: follow_log with the frames when they follow
  // on from what the channel holds, else follow_log_end (the store, not the message, says
  // how far the log goes).
  void follow_news(std::int64_t last_id, std::vector<frame_ptr> frames);

  // Run ownership across nodes (core/storage/run_leases.hpp): the live run's batches
  // carry its lease token until its done is committed.
  void set_fence(std::int64_t token) { pipeline_.set_fence(token); }
  std::int64_t fence_token() const { return pipeline_.fence(); }
  // The live run's lease was taken by another node (a renewal found it gone, or the
  // store refused a batch as fenced_out): the run is asked to stop, nothing more of it
  // is written, and once it ended the channel follows the log (the new owner's events).
  void fence_out();
  bool fenced() const { return pipeline_.fenced(); }

  std::shared_ptr<run> live_run() const { return run_; }
  void set_live_run(std::shared_ptr<run> r);
  // Completes (on the strand) once no run is live: at once when none is, else when the
  // live run's done is released (or the channel closes). Multitask interrupt waits here.
  boost::asio::awaitable<void> wait_idle();

  // The session's queue (multitask enqueue, docs/timeline.md) as this process saw it:
  // the newest seq it queued and the newest a run took. A run takes every row the store
  // holds, so messages wait while queued > taken; both only grow, so the order in which
  // the store's completions reach the strand does not matter. (Rows left by a crash are
  // not counted: the session's next run takes them.)
  void note_queued(std::int64_t seq) { queued_up_to_ = std::max(queued_up_to_, seq); }
  void note_taken(std::int64_t seq) { taken_up_to_ = std::max(taken_up_to_, seq); }
  bool queue_waiting() const { return queued_up_to_ > taken_up_to_; }
  // Set while a run of the queued messages is being started, so only one is.
  bool queue_starting() const { return queue_starting_; }
  void set_queue_starting(bool starting) { queue_starting_ = starting; }

  // The session was deleted: a live run is aborted and its last events (aborted
  // status, done) still reach its followers, unstored; then every subscriber is closed.
  void close();
  // Ends every subscriber's stream but keeps the channel (draining).
  void close_subscribers();
  bool closed() const { return closed_; }
  bool deleting() const { return deleting_; }

  // Eviction (session_hub::evict_idle). True when the channel holds nothing a new channel
  // made from the store would not know: no run, no subscriber, nothing queued, in flight
  // or fenced, no message waiting in the session's queue (or it is closed).
  bool evictable() const;

  // --- any thread ---
  // Steady-clock ms since which the channel has had no run, no subscriber and nothing
  // on its way to the store; 0 while it has. A hint for the eviction's sweep, kept at
  // each change (a commit, a subscriber coming or going, a run starting or ending):
  // evictable() on the strand is the exact check.
  std::int64_t quiet_since_ms() const { return quiet_since_ms_.load(std::memory_order_relaxed); }

  // --- any thread ---
  struct snapshot_view {
    std::optional<run_summary> run;
    std::int64_t last_event_id = 0;
  };
  snapshot_view snapshot() const;

 private:
  // subscriber_cursors::source: what the cursors read, on the strand.
  std::int64_t committed_id() const override { return pipeline_.committed_id(); }
  const event_buffer& ring() const override { return ring_; }
  std::int64_t oldest_held() const override;
  void read_log(std::int64_t after_id, std::size_t limit, log_page_handler done) override;
  void defer(std::function<void()> step) override;
  std::shared_ptr<const void> keep_alive() override;
  // commit_pipeline::owner: a batch is committed (or, deleting, released unstored).
  void released(const std::vector<frame_ptr>& batch) override;
  std::chrono::steady_clock::duration release_spacing() const override;
  void on_fenced_out() override;
  // After a fenced run ended: unfence, number on from what was committed, and follow the log.
  void follow_after_fence();

  void publish_snapshot();
  void close_now();
  void wake_idle_waiters();
  void release_ring_if_idle();
  void note_quiet();  // quiet_since_ms_ from the state now

  strand_type strand_;
  std::string session_id_;
  store_executor& store_;
  event_log_writer& log_;
  metrics& stats_;
  live_fanout* fanout_;
  options opts_;

  std::int64_t next_id_;
  bool closed_ = false;
  bool deleting_ = false;       // closing once the live run's done is delivered
  commit_pipeline pipeline_;    // published events until they are durable
  event_buffer ring_;           // the newest committed events
  subscriber_cursors cursors_;  // who gets them, and where each one is
  std::shared_ptr<run> run_;
  std::int64_t queued_up_to_ = 0;
  std::int64_t taken_up_to_ = 0;
  bool queue_starting_ = false;
  std::vector<std::function<void()>> idle_waiters_;  // wait_idle()'s, woken when run_ clears

  // What snapshot() reads from other threads: the last id on every commit (an atomic),
  // the run only when it starts or ends (under the mutex).
  std::atomic<std::int64_t> snapshot_last_id_{0};
  std::atomic<std::int64_t> quiet_since_ms_{0};
  mutable std::mutex snapshot_mutex_;
  std::optional<run_summary> snapshot_run_;
};

}  // namespace agw::core
