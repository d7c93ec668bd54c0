#pragma once
// SQLite's way of making the live pipeline's events durable (core's
// event_log_writer port; docs/streaming.md, "The event log").
//
// Small batches (a paced run's single tokens) go into the shared append-only
// event_journal: every session's batches of one writer cycle in one row, one
// store job, one savepoint, one completion fan-out. What only the journal holds
// stays in memory (journal_tails) as the session's tail; once the tail holds
// `segment_frames` events, the run ends, or its oldest event is `segment_age` old
// (a random point in [age/2, age], so sessions that started together do not all
// write in one cycle), the tail and the batch go into one segment row of the
// session's own log, and retention trims that log. The journal is cut below the
// oldest row a tail still needs (the store executor's maintenance) and folded into
// segments at start-up (sqlite_store::fold_journal).
//
// Thread-safety: open(), forget(), retire() and a session log's append() may be called from
// any thread (one mutex, which every step below takes). A session's state is found
// through the log its channel opened, never by id on the way of a batch. A session's age timer runs on the executor its
// batches name (the channel's strand), and owns itself while it waits, so none
// outlives its io_context. One store job's completion runs on the executor of the
// first batch it took and settles every batch of the job; each batch's `done` is
// then posted to its own executor. The store executor must be stopped (its queue
// drained) before the writer is destroyed.
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/storage/event_log_writer.hpp"
#include "core/store_executor.hpp"
#include "persistence/journal_tails.hpp"

namespace agw::persistence {

class sqlite_event_writer final : public core::event_log_writer {
 public:
  struct options {
    // Journaled events that make a segment: a tail's threshold is drawn in
    // [min(segment_frames_min, segment_frames), segment_frames] when it starts.
    std::size_t segment_frames = 64;
    std::size_t segment_frames_min = 32;
    // The longest an event stays journal-only; 0: no timer (segments come from size and
    // run ends; the start-up fold does the rest).
    std::chrono::milliseconds segment_age{2000};
  };

  sqlite_event_writer(core::store_executor& store, journal_tails& tails, options opts);
  ~sqlite_event_writer() override;

  std::shared_ptr<session_log> open(const std::string& session_id) override;
  void forget(std::string_view session_id) override;
  // Only with no request in flight or waiting and an empty tail: journal-only events are
  // what a read of the session's last id does not see (it reads the newest segment).
  bool retire(std::string_view session_id) override;

 private:
  struct session_state;
  using state_ptr = std::shared_ptr<session_state>;
  // One batch on its way to the writer thread, with where it goes.
  struct request {
    state_ptr session;
    batch b;  // b.events may be empty: a segment of the tail only
    bool as_segment = false;
    std::vector<core::frame_ptr> tail;  // segments: the journaled events written with it
  };
  // Per opened session, until it is forgotten; its fields are guarded by mutex_.
  struct session_state final : session_log, std::enable_shared_from_this<session_state> {
    session_state(sqlite_event_writer& w, std::string id, std::shared_ptr<journal_tails::slot> t)
        : writer(w), session_id(std::move(id)), tail(std::move(t)) {}
    void append(batch b) override { writer.append_to(*this, std::move(b)); }

    sqlite_event_writer& writer;
    const std::string session_id;
    const std::shared_ptr<journal_tails::slot> tail;
    std::size_t tail_size = 0;              // events in `tail` (the writer alone changes it)
    std::size_t segment_threshold = 0;      // this tail's size that makes a segment (drawn when it starts)
    bool in_flight = false;                 // one request at a time per session, so tails and claims stay exact
    std::optional<batch> waiting;           // the channel's next batch, behind a tail segment in flight
    bool segment_due = false;               // the tail is old enough: write it as a segment next
    std::size_t retention = 0;              // as its last batch said
    boost::asio::any_io_executor executor;  // its channel's strand
    std::uint64_t timer_generation = 0;     // a timer armed earlier than this one is stale
    bool forgotten = false;                 // deleted: nothing it appends is kept
  };

  void append_to(session_state& s, batch b);
  void dispatch(session_state& s, batch b);     // mutex_ held
  void enqueue(request r);                      // mutex_ held
  void enqueue_tail_segment(session_state& s);  // mutex_ held
  // The requests one store job took, and each one's outcome.
  struct taken_batch {
    bool ran = false;
    std::vector<request> requests;
    std::vector<std::exception_ptr> errors;
  };
  void submit(boost::asio::any_io_executor completion_executor);
  void run_job(core::store_connection& c, taken_batch& taken);        // writer thread
  void write_journal(core::store_connection& c, taken_batch& taken);  // writer thread
  void arm_timer(const state_ptr& s);                                 // mutex_ held
  void on_timer(const std::weak_ptr<session_state>& session, std::uint64_t generation);
  void completed(request& r, std::exception_ptr error);
  void settle(const request& r, std::exception_ptr error);  // mutex_ held
  static void write_segment(core::store_connection& c, const request& r);

  core::store_executor& store_;
  journal_tails& tails_;
  options opts_;
  std::uint64_t timers_armed_ = 0;  // mutex_
  std::mutex mutex_;
  std::unordered_map<std::string, state_ptr> sessions_;  // opened, not forgotten
  std::vector<request> pending_;                         // taken by the next job when the writer runs it
  bool job_queued_ = false;                              // a job is queued that has not taken pending_ yet
  // That job, not yet handed to the store: whoever queued it submits it once out of mutex_.
  std::optional<boost::asio::any_io_executor> submit_due_;
};

}  // namespace agw::persistence
