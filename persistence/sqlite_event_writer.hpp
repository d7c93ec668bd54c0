#pragma once
// SQLite's way of making the live pipeline's events durable (core's
// event_log_writer port; docs/streaming.md, "The event log").
//
// Two ways in, chosen per batch:
// - Small batches (a paced run's single tokens) go to the event journal
//   (journal_file), with no SQLite transaction; such an event is released once the
//   write(2) of its record returned. A batch appended on its channel's io thread (as a
//   channel's are) waits in that thread's lane for a flush the first batch of the
//   lane posts there (or, within lane_spacing of the lane's last flush, arms a timer
//   for): the thread's handlers of the moment (its timer pass) add theirs first, then the flush writes them as one record and
//   runs their outcomes, on the thread itself, as Redis writes its append-only file from its event loop. (A channel's next batch,
//   appended from its outcome, makes the next flush.) So a paced token costs no other thread's wake-up and no hand-off back
//   (measured in docs/streaming.md, "The journal written by the io threads"). What that gives up: a write(2) the kernel holds up
//   (dirty-page throttling, a stalled disk) holds up that io thread, and every other io thread that flushes meanwhile waits for
//   the journal's lock (with the checksum, the tails' bookkeeping and, every 16 MiB, a new file's open under it), where before
//   only the journal's batches waited (and they wait for it anyway). A batch appended from any other thread goes to the journal's
//   own thread, which writes every such pending batch of one cycle as one record. Both write under one lock (journal_mutex_), and
//   settle what they wrote before letting go of it, so that a release of files (the journal thread's, every
//   journal_release_interval) never passes a record no tail claims yet. What only the
//   journal holds stays in memory (journal_tails) as the session's tail. Once the
//   tail holds `segment_frames` events (a threshold drawn per tail) or its oldest
//   event is `segment_age` old (a random point in [age/2, age]), the tail is written
//   into a segment row of the session's own log by the store's writer, in the
//   background: the session's next batches go on to the journal meanwhile, and the
//   journal files no tail needs any more are removed.
// - A batch that ends a run, or is big by itself (`batch_segment_frames` events or
//   more: a run at full speed), goes with the tail into one segment row through the
//   store's writer, and is released once that commits: an idle session then holds
//   nothing journal-only, and retention trims its log at every run's end.
// A session has at most one segment on its way to the store; a segment batch that
// comes while one is waits behind it (the channel sends nothing else meanwhile).
//
// Each journal entry names its session's incarnation (the thread id), so that the
// start-up fold (sqlite_store::fold_journal) never gives a deleted session's journaled
// events to a session made again with its id. A tail holds at most 2 × segment_frames
// events: past that, batches go the segment way, and a store that cannot take them
// holds the run back (the channel's watermark), not memory or disk.
//
// Thread-safety: open(), forget(), retire() and a session log's append() may be called from
// any thread (one mutex, which every step below takes; the journal's lock, when both are
// held, is taken first). A session's state is found through the log its channel opened,
// never by id on the way of a batch. A session's age timer runs on the executor its
// batches name (the channel's strand), and owns itself while it waits, so none outlives
// its io_context. Each batch's `done` runs on its own executor: in place from its lane's
// flush (the strand's own thread), posted, or, for the journal thread's batches, handed to
// its io thread's core::completion_inbox. The journal thread is stopped by the destructor
// (after a last cycle), and must be before any io_context its batches name is destroyed.
// The writer is destroyed when no thread runs those contexts any more: a lane's posted
// flush names it (stop() writes what the lanes hold, so a flush that runs after it finds
// nothing). The store executor must be stopped (its queue drained) before the writer is
// destroyed.
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/paced_worker.hpp"
#include "core/storage/event_log_writer.hpp"
#include "core/store_executor.hpp"
#include "persistence/journal_file.hpp"
#include "persistence/journal_tails.hpp"

namespace agw::core {
class completion_inbox;
}  // namespace agw::core

namespace agw::persistence {

class sqlite_event_writer final : public core::event_log_writer {
 public:
  struct options {
    // Journaled events that make a segment: a tail's threshold is drawn in
    // [min(segment_frames_min, segment_frames), segment_frames] when it starts. Tails
    // are written in the background, so they may be long: a paced run's tail usually
    // goes with its `done`, in one segment row per run.
    std::size_t segment_frames = 1024;
    std::size_t segment_frames_min = 512;
    // A batch of this many events or more (a run at full speed) is a segment by itself:
    // as cheap to write as its journal record would be, and nothing is kept twice.
    std::size_t batch_segment_frames = 32;
    // The longest an event stays journal-only (and its journal file on disk); 0: no timer
    // (segments come from size and run ends; the start-up fold does the rest).
    std::chrono::milliseconds segment_age{30'000};
    // For the journal thread's batches (appended outside the io threads): under load its
    // writes are at least this far apart (batches arriving meanwhile share one); an idle
    // journal writes at once. The io threads' lanes write once per pass.
    std::chrono::microseconds journal_interval{1000};
    // An io thread's journal flushes are at least this far apart: a flush due sooner
    // waits on a timer for the rest, so that a run at full speed (and its followers)
    // gets batches of that many microseconds' events, not of one each. Paced passes, a
    // whole millisecond apart, never wait.
    std::chrono::microseconds lane_spacing{500};
    // How often the journal thread removes the files no tail needs any more.
    std::chrono::milliseconds journal_release_interval{100};
  };

  // `journal` is this writer's alone from here on (appended to and released under its
  // journal lock).
  sqlite_event_writer(core::store_executor& store, journal_tails& tails, journal_file& journal, options opts);
  ~sqlite_event_writer() override;
  // Writes what is pending for the journal, stops its thread, and queues every tail as a
  // segment; later batches fail (storage is shutting down). Then stop the store executor,
  // which commits those segments.
  void stop();

  std::shared_ptr<session_log> open(const std::string& session_id, const std::string& thread_id) override;
  void forget(std::string_view session_id) override;
  // Only with no batch or segment on its way and an empty tail: journal-only events are
  // what a read of the session's last id does not see (it reads the newest segment).
  bool retire(std::string_view session_id) override;

 private:
  struct session_state;
  using state_ptr = std::shared_ptr<session_state>;
  // A journal batch on its way to the journal: in its io thread's lane or with the
  // journal thread.
  struct journal_request {
    state_ptr session;
    batch b;
    // With the journal thread: b.executor, tracked, so that its io_context runs until the
    // outcome is handed over there (then the inbox's posted handler keeps it running). In
    // a lane: empty (the lane's posted flush is the context's work).
    boost::asio::any_io_executor work;
  };
  // A segment on its way to the store's writer: the tail (as it was when the segment
  // was asked for) and the batch, if one came with it.
  struct segment_request {
    state_ptr session;
    batch b;                            // b.events may be empty: a segment of the tail only
    std::vector<core::frame_ptr> tail;  // the journaled events written with it
  };
  // Per opened session, until it is forgotten; its fields are guarded by mutex_.
  struct session_state final : session_log, std::enable_shared_from_this<session_state> {
    session_state(sqlite_event_writer& w, std::string id, std::string thread, std::shared_ptr<journal_tails::slot> t)
        : writer(w), session_id(std::move(id)), thread_id(std::move(thread)), tail(std::move(t)) {}
    void append(batch b) override { writer.append_to(*this, std::move(b)); }

    sqlite_event_writer& writer;
    const std::string session_id;
    const std::string thread_id;  // the session's incarnation, in each journal entry
    const std::shared_ptr<journal_tails::slot> tail;
    std::size_t tail_size = 0;                // events in `tail` (the writer alone changes it)
    std::size_t segment_threshold = 0;        // this tail's size that asks for a segment (drawn when it starts)
    bool journal_in_flight = false;           // the channel's batch is in a lane or with the journal thread
    bool segment_in_flight = false;           // one segment at a time per session, so tails stay exact
    std::optional<batch> waiting;             // a segment batch, behind the segment in flight
    bool segment_due = false;                 // the tail is old enough: write it as a segment next
    bool segment_held = false;                // a tail segment was refused: the next waits for the age timer
    std::size_t retention = 0;                // as its last batch said
    boost::asio::any_io_executor executor;    // its channel's strand
    core::completion_inbox* inbox = nullptr;  // its channel's io thread's, once a batch came from there
    std::uint64_t timer_generation = 0;       // a timer armed earlier than this one is stale
    bool forgotten = false;                   // deleted: nothing it appends is kept
  };

  void append_to(session_state& s, batch b);
  // --- mutex_ held ---
  void request_segment(session_state& s, std::optional<batch> b);  // with the tail
  void segment_if_due(session_state& s);
  void arm_timer(const state_ptr& s);
  // --- the journal: the io threads' lanes and the journal thread ---
  void flush_lane(core::completion_inbox* lane);  // the lane's io thread
  // Writes `taken` as one record and settles it; outcomes to their executors (from a lane,
  // on their own thread: each run in place; else one hand-over per io thread).
  void write_journal(std::vector<journal_request>& taken, bool from_lane);
  void journal_cycle();
  void release_journal_files();                                                          // the journal thread
  void settle_journal(journal_request& r, std::uint64_t seq, std::exception_ptr error);  // mutex_ held
  void journal_cycle_failed(std::exception_ptr error);  // what is pending hears `error` (after stop)
  // --- the store's writer and segment completions ---
  struct taken_segments {
    bool ran = false;
    std::vector<segment_request> requests;
    std::vector<std::exception_ptr> errors;
  };
  void submit_segments(boost::asio::any_io_executor completion_executor);
  void run_segments(core::store_connection& c, taken_segments& taken);  // writer thread
  void settle_segment(segment_request& r, std::exception_ptr error);    // mutex_ held
  static void write_segment(core::store_connection& c, const segment_request& r);
  void on_timer(const std::weak_ptr<session_state>& session, std::uint64_t generation);
  // Outside mutex_: hands the store the segment job queued meanwhile, if any.
  void submit_due_segments(std::optional<boost::asio::any_io_executor> due);

  core::store_executor& store_;
  journal_tails& tails_;
  journal_file& journal_;
  options opts_;
  std::uint64_t timers_armed_ = 0;  // mutex_
  std::mutex mutex_;
  bool stopped_ = false;
  std::unordered_map<std::string, state_ptr> sessions_;  // opened, not forgotten
  // The journal's appends and releases (journal_file has no lock of its own).
  std::mutex journal_mutex_;
  // Batches appended on an io thread, by its context's inbox, until that thread's flush
  // (mutex_).
  struct lane {
    std::vector<journal_request> requests;
    std::chrono::steady_clock::time_point flushed_at{};  // when its last flush took it
  };
  std::unordered_map<core::completion_inbox*, lane> lanes_;
  // The journal thread's next record: batches appended from other threads.
  std::vector<journal_request> journal_pending_;
  bool journal_notified_ = false;  // the journal thread was told of what is pending
  // When the journal thread is next due to release files: a lane's flush past it tells
  // the thread (which otherwise hears only of the other threads' batches).
  std::atomic<std::chrono::steady_clock::rep> release_due_{0};
  std::vector<std::filesystem::path> unremoved_;  // the journal thread's: files to remove again
  // The segments the store's next job takes when the writer runs it.
  std::vector<segment_request> segments_pending_;
  bool segment_job_queued_ = false;  // a job is queued that has not taken segments_pending_ yet
  // That job, not yet handed to the store: whoever queued it submits it once out of mutex_.
  std::optional<boost::asio::any_io_executor> submit_due_;
  // Last: its thread runs journal_cycle() on everything above until the destructor stops it.
  core::paced_worker journal_thread_;
};

}  // namespace agw::persistence
