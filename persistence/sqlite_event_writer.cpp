#include "persistence/sqlite_event_writer.hpp"

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <random>

#include "core/completion_fanout.hpp"
#include "core/completion_inbox.hpp"
#include "core/events/log_codec.hpp"
#include "core/time_format.hpp"
#include "persistence/journal_codec.hpp"
#include "persistence/sqlite_store.hpp"

namespace agw::persistence {

namespace net = boost::asio;

namespace {

// Spreads sessions' segment writes over time (below); not for anything that must be unpredictable.
std::size_t random_below(std::size_t n) {
  thread_local std::minstd_rand jitter(std::random_device{}());
  return n == 0 ? 0 : jitter() % n;
}

void post_outcome(std::function<void(std::exception_ptr)>& done, const net::any_io_executor& executor, std::exception_ptr error) {
  if (done) net::post(executor, [done = std::move(done), error] { done(error); });
}

}  // namespace

sqlite_event_writer::sqlite_event_writer(core::store_executor& store, journal_tails& tails, journal_file& journal, options opts)
    : store_(store), tails_(tails), journal_(journal), opts_(opts), journal_thread_("agw-journal", opts.journal_interval, [this] {
        journal_cycle();
      }) {}

sqlite_event_writer::~sqlite_event_writer() { stop(); }

void sqlite_event_writer::stop() {
  {
    std::lock_guard lock(mutex_);
    if (std::exchange(stopped_, true)) return;
  }
  // Its last cycle writes what is pending and settles it.
  journal_thread_.stop();
  // So is what the io threads' lanes hold, whose flushes have not run (their threads
  // stopped, or not there yet): a flush that runs later finds its lane empty.
  std::vector<journal_request> laned;
  {
    std::lock_guard lock(mutex_);
    for (auto& [inbox, l] : lanes_) std::move(l.requests.begin(), l.requests.end(), std::back_inserter(laned));
    lanes_.clear();
  }
  if (!laned.empty()) write_journal(laned, /*from_lane=*/false);
  // A batch that came between the last cycle and the thread's end was not written: it
  // hears so (as later batches do), and its channel's run ends as the process does.
  journal_cycle_failed(std::make_exception_ptr(core::store_error("storage is shutting down")));
  // A clean stop leaves the database whole where it can: every tail with no segment on its
  // way becomes one now (the store's writer commits it before it stops). Whatever stays
  // journal-only is folded at the next start.
  std::optional<net::any_io_executor> due;
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, s] : sessions_)
      if (s->tail_size > 0 && !s->segment_in_flight) request_segment(*s, std::nullopt);
    due = std::exchange(submit_due_, std::nullopt);
  }
  submit_due_segments(due);
}

std::shared_ptr<core::event_log_writer::session_log> sqlite_event_writer::open(const std::string& session_id,
                                                                               const std::string& thread_id) {
  std::lock_guard lock(mutex_);
  auto& s = sessions_[session_id];
  // Another incarnation's state (its deletion not heard of yet) is not this one's.
  if (s && s->thread_id != thread_id && !s->thread_id.empty() && !thread_id.empty()) {
    s->forgotten = true;
    s.reset();
    tails_.forget(session_id);
  }
  if (!s) s = std::make_shared<session_state>(*this, session_id, thread_id, tails_.open(session_id));
  return s;
}

void sqlite_event_writer::append_to(session_state& s, batch b) {
  std::optional<net::any_io_executor> due;
  bool notify = false;
  // The lane's first batch since its last flush: the flush is posted to its executor.
  core::completion_inbox* lane_to_flush = nullptr;
  std::optional<net::any_io_executor> flush;
  std::chrono::steady_clock::time_point flush_at{};  // not before: the lane's spacing
  {
    std::lock_guard lock(mutex_);
    if (s.forgotten || stopped_) {
      // Deleted (session_hub::session_deleted forgets it at once): nothing is written; the
      // channel, closed or closing, ignores the error or retries until it stores nothing.
      post_outcome(b.done, b.executor,
                   std::make_exception_ptr(core::store_error(stopped_ ? "storage is shutting down" : "the session was deleted")));
      return;
    }
    s.retention = b.retention;
    if (!s.executor) s.executor = b.executor;  // the channel's strand: the same for every batch
    // A run's end, or a batch as big as a segment (a run at full speed): one segment row
    // with the tail. So is any batch of a tail at its bound (segments that cannot be
    // written, a writer held up): the run then waits for the store, as before the
    // journal, instead of memory and the journal's files growing. Anything else: the
    // journal, without waiting for any segment.
    if (b.ends_run || b.events.size() >= opts_.batch_segment_frames || s.tail_size >= 2 * opts_.segment_frames) {
      if (s.segment_in_flight)
        s.waiting = std::move(b);
      else
        request_segment(s, std::move(b));
    } else {
      s.journal_in_flight = true;
      // Channels append on their io thread: found once, as a channel's context never
      // changes. A batch appended from elsewhere (tests) finds no inbox, and goes to the
      // journal thread.
      if (!s.inbox) s.inbox = core::completion_inbox::of_local(b.executor);
      if (s.inbox) {
        auto& l = lanes_[s.inbox];
        if (l.requests.empty()) {
          lane_to_flush = s.inbox;
          flush = b.executor;
          flush_at = l.flushed_at + opts_.lane_spacing;
        }
        l.requests.push_back({s.shared_from_this(), std::move(b), {}});
      } else {
        auto work = net::prefer(b.executor, net::execution::outstanding_work.tracked);
        journal_pending_.push_back({s.shared_from_this(), std::move(b), std::move(work)});
        notify = !std::exchange(journal_notified_, true);
      }
    }
    due = std::exchange(submit_due_, std::nullopt);
  }
  // Posted behind the handlers already queued on the thread (its timer pass), whose
  // batches join the lane before it is written.
  if (flush) {
    if (std::chrono::steady_clock::now() >= flush_at) {
      net::post(*flush, [this, lane_to_flush] { flush_lane(lane_to_flush); });
    } else {
      // Owned by its wait: destroyed with the handler if the context goes first.
      auto timer = std::make_shared<net::steady_timer>(*flush, flush_at);
      timer->async_wait([this, timer, lane_to_flush](const boost::system::error_code&) { flush_lane(lane_to_flush); });
    }
  }
  // Outside the lock: the threads this wakes take mutex_ first thing.
  if (notify) journal_thread_.notify();
  submit_due_segments(due);
}

// --- segments (mutex_ held) ---

void sqlite_event_writer::request_segment(session_state& s, std::optional<batch> b) {
  s.segment_in_flight = true;
  segment_request r;
  r.session = s.shared_from_this();
  if (b) {
    r.b = std::move(*b);
  } else {
    r.b.retention = s.retention;
    r.b.executor = s.executor;
  }
  if (s.tail_size > 0) r.tail = tails_.tail(*s.tail);
  segments_pending_.push_back(std::move(r));
  if (segment_job_queued_) return;  // the queued job will take this one too
  segment_job_queued_ = true;
  // Submitted by the caller once it has let go of mutex_.
  submit_due_ = segments_pending_.back().b.executor;
}

void sqlite_event_writer::segment_if_due(session_state& s) {
  if (s.segment_in_flight || s.tail_size == 0) return;
  // A refused segment holds the threshold back until the age timer tries again.
  if (s.segment_due || (!s.segment_held && s.tail_size >= s.segment_threshold)) request_segment(s, std::nullopt);
}

void sqlite_event_writer::arm_timer(const state_ptr& s) {
  if (opts_.segment_age.count() <= 0) return;
  // Somewhere in [age/2, age]: sessions that started together (a burst of runs) must not
  // all write their segments in the same writer cycle, which would stall every commit.
  const auto half = opts_.segment_age / 2;
  auto timer = std::make_shared<net::steady_timer>(
      s->executor, half + std::chrono::milliseconds(random_below(static_cast<std::size_t>(half.count()) + 1)));
  s->timer_generation = ++timers_armed_;
  // Never cancelled: a timer that fires for a tail already written finds it stale.
  timer->async_wait([this, timer, session = std::weak_ptr<session_state>(s),
                     generation = s->timer_generation](const boost::system::error_code& ec) {
    if (!ec) on_timer(session, generation);
  });
}

void sqlite_event_writer::on_timer(const std::weak_ptr<session_state>& session, std::uint64_t generation) {
  std::optional<net::any_io_executor> due;
  {
    std::lock_guard lock(mutex_);
    auto s = session.lock();
    if (!s || s->forgotten || s->timer_generation != generation || s->tail_size == 0) return;
    s->segment_due = true;
    s->segment_held = false;
    // Idle: write the tail now; otherwise the segment in flight's completion arms the
    // next age for what it left.
    segment_if_due(*s);
    due = std::exchange(submit_due_, std::nullopt);
  }
  submit_due_segments(due);
}

// --- the journal: the io threads' lanes and the journal thread ---

void sqlite_event_writer::flush_lane(core::completion_inbox* lane) {
  std::vector<journal_request> taken;
  {
    std::lock_guard lock(mutex_);
    auto it = lanes_.find(lane);
    if (it == lanes_.end() || it->second.requests.empty()) return;  // stop() wrote it
    taken.swap(it->second.requests);
    it->second.flushed_at = std::chrono::steady_clock::now();
  }
  write_journal(taken, /*from_lane=*/true);
  // Releases are the journal thread's (an unlink may take a while): told when one is due.
  if (std::chrono::steady_clock::now().time_since_epoch().count() >= release_due_.load(std::memory_order_relaxed))
    journal_thread_.notify();
}

void sqlite_event_writer::write_journal(std::vector<journal_request>& taken, bool from_lane) {
  std::string record;
  std::uint64_t seq = 0;
  std::exception_ptr error;
  try {
    // Each entry names its session's incarnation: the start-up fold gives no session
    // the events of an earlier one with its id.
    std::vector<journal_entry> entries;
    entries.reserve(taken.size());
    const auto now = core::now_ms();
    for (const auto& r : taken)
      entries.push_back(
          {{r.session->session_id, r.b.events.front()->id, r.b.events.back()->id, core::encode_log_frames(r.b.events), now},
           r.session->thread_id});
    std::vector<const journal_entry*> rows;
    rows.reserve(entries.size());
    for (const auto& e : entries) rows.push_back(&e);
    record = encode_journal_entries(rows);
  } catch (...) {
    error = std::current_exception();
  }
  std::optional<net::any_io_executor> due;
  {
    std::lock_guard journal_lock(journal_mutex_);
    if (!error) {
      try {
        seq = journal_.append(record);
      } catch (...) {
        error = std::current_exception();
      }
    }
    // Settled (claimed by their tails) before the journal's lock goes: a release reads
    // the claims under it.
    std::lock_guard lock(mutex_);
    for (auto& r : taken) settle_journal(r, seq, error);
    due = std::exchange(submit_due_, std::nullopt);
  }
  submit_due_segments(due);
  if (from_lane) {
    // On the lane's thread, the channels' own (their implicit strand): each outcome runs
    // here and now.
    for (auto& r : taken)
      if (r.b.done) net::dispatch(r.b.executor, [done = std::move(r.b.done), error] { done(error); });
    return;
  }
  // At most one handler per io thread for its channels' outcomes, not one per channel.
  core::completion_fanout outcomes;
  for (auto& r : taken)
    if (r.b.done) outcomes.add(r.b.executor, [done = std::move(r.b.done), error] { done(error); });
  outcomes.hand_over_all();
}

void sqlite_event_writer::journal_cycle() {
  std::vector<journal_request> taken;
  {
    std::lock_guard lock(mutex_);
    taken.swap(journal_pending_);
    journal_notified_ = false;
  }
  if (!taken.empty()) write_journal(taken, /*from_lane=*/false);
  // The files no tail needs any more go (the store's writer segments the tails).
  const auto now = std::chrono::steady_clock::now();
  if (now.time_since_epoch().count() >= release_due_.load(std::memory_order_relaxed)) {
    release_due_.store((now + opts_.journal_release_interval).time_since_epoch().count(), std::memory_order_relaxed);
    release_journal_files();
  }
}

void sqlite_event_writer::release_journal_files() {
  {
    std::lock_guard journal_lock(journal_mutex_);
    auto gone = journal_.detach_below(tails_.oldest_claim().value_or(journal_.next_seq()));
    std::move(gone.begin(), gone.end(), std::back_inserter(unremoved_));
  }
  // Outside the lock, which the io threads' flushes take. One that cannot go now is tried
  // again at the next release (and folded again at a start-up, which writes nothing twice).
  std::erase_if(unremoved_, [](const std::filesystem::path& path) {
    std::error_code ec;
    return std::filesystem::remove(path, ec) || !ec;
  });
}

void sqlite_event_writer::settle_journal(journal_request& r, std::uint64_t seq, std::exception_ptr error) {
  auto& s = *r.session;
  s.journal_in_flight = false;
  // Failed: the channel sends the batch again after a pause. Deleted: nothing is kept.
  if (error || s.forgotten) return;
  const std::size_t before = tails_.add(*s.tail, r.b.events, seq);
  s.tail_size = before + r.b.events.size();
  if (before == 0) {
    // A new tail: its own size threshold, drawn so that sessions paced alike do not all
    // ask for their segments in the same writer cycle, and its first events start its age.
    const auto low = std::min(opts_.segment_frames_min, opts_.segment_frames);
    s.segment_threshold = low + random_below(opts_.segment_frames - low + 1);
    arm_timer(r.session);
  }
  segment_if_due(s);
}

void sqlite_event_writer::journal_cycle_failed(std::exception_ptr error) {
  std::vector<journal_request> stranded;
  {
    std::lock_guard lock(mutex_);
    stranded.swap(journal_pending_);
    for (auto& r : stranded) r.session->journal_in_flight = false;
  }
  for (auto& r : stranded) post_outcome(r.b.done, r.work, error);
}

// --- the store's writer ---

void sqlite_event_writer::submit_due_segments(std::optional<net::any_io_executor> due) {
  if (due) submit_segments(*due);
}

void sqlite_event_writer::submit_segments(net::any_io_executor completion_executor) {
  auto taken = std::make_shared<taken_segments>();
  auto job = [this, taken](core::store_connection& c) { run_segments(c, *taken); };
  // Urgent: a run's end must not wait behind a burst of ordinary writes. Each request's
  // completion then goes to its own session's executor.
  auto on_done = [this, taken](std::exception_ptr all) {
    std::optional<net::any_io_executor> due;
    {
      std::lock_guard lock(mutex_);
      if (!taken->ran) {
        // Never reached the writer (queue full, shutting down): fail what is pending, and
        // the channels retry.
        taken->requests.swap(segments_pending_);
        segment_job_queued_ = false;
      }
      taken->errors.resize(taken->requests.size());
      for (std::size_t i = 0; i < taken->requests.size(); ++i) settle_segment(taken->requests[i], all ? all : taken->errors[i]);
      due = std::exchange(submit_due_, std::nullopt);
    }
    submit_due_segments(due);
    for (std::size_t i = 0; i < taken->requests.size(); ++i) {
      auto& r = taken->requests[i];
      post_outcome(r.b.done, r.b.executor, all ? all : taken->errors[i]);
    }
  };
  store_.async_write_urgent(std::move(job), net::bind_executor(completion_executor, std::move(on_done)));
}

void sqlite_event_writer::run_segments(core::store_connection& c, taken_segments& taken) {
  // What is pending when the writer reaches the job goes into it: the longer the writer
  // is busy, the more sessions share the job.
  {
    std::lock_guard lock(mutex_);
    taken.requests.swap(segments_pending_);
    segment_job_queued_ = false;
  }
  taken.ran = true;
  taken.errors.assign(taken.requests.size(), nullptr);
  for (std::size_t i = 0; i < taken.requests.size(); ++i) {
    // A transaction SQLite rolled back itself (disk full, I/O) fails the whole job:
    // nothing after it may be written outside the batch.
    if (!c.batch_open()) throw core::store_error("the database rolled the write transaction back");
    // One session's refused segment (its session deleted meanwhile, say) spares the
    // others, and is undone whole (segment and retention trim together).
    c.savepoint();
    try {
      write_segment(c, taken.requests[i]);
      c.release_savepoint();
    } catch (...) {
      taken.errors[i] = std::current_exception();
      c.rollback_to_savepoint();
      c.release_savepoint();
    }
  }
}

void sqlite_event_writer::write_segment(core::store_connection& c, const segment_request& r) {
  std::vector<core::frame_ptr> events = r.tail;
  events.insert(events.end(), r.b.events.begin(), r.b.events.end());
  if (events.empty()) return;
  // Only into its own session: deleted and made again with the id (its deletion not yet
  // heard of here), the row is another incarnation's, whose log must not get these.
  // This executor's connections are SQLite's (sqlite_backend builds them).
  if (!r.session->thread_id.empty() &&
      !static_cast<sqlite_store&>(c).session_has_thread(r.session->session_id, r.session->thread_id))
    throw core::store_error("the session was deleted");
  c.append_events(
      {r.session->session_id, events.front()->id, events.back()->id, core::encode_log_frames(events), core::now_ms()});
  const auto keep = static_cast<std::int64_t>(r.b.retention);
  if (keep > 0 && events.back()->id > keep) c.trim_events(r.session->session_id, events.back()->id - keep + 1);
}

void sqlite_event_writer::settle_segment(segment_request& r, std::exception_ptr error) {
  auto& s = *r.session;
  s.segment_in_flight = false;
  if (s.forgotten) {
    // Deleted meanwhile: nothing of it is kept. A batch still waiting hears so (its
    // channel is closed and ignores it).
    if (s.waiting)
      post_outcome(s.waiting->done, s.waiting->executor, std::make_exception_ptr(core::store_error("the session was deleted")));
    s.waiting.reset();
    return;
  }
  if (!error) {
    // The tail's events the segment holds are in the session's log now: the journal may
    // drop them. What joined the tail meanwhile stays, and starts an age of its own.
    if (!r.tail.empty()) s.tail_size = tails_.segmented(*s.tail, r.tail.back()->id);
    s.segment_due = false;
    s.segment_held = false;
    if (s.tail_size > 0 && !r.tail.empty()) arm_timer(r.session);
  } else if (r.b.events.empty()) {
    // A tail segment was refused: try again after another age, not at once (a persistent
    // refusal would otherwise hold the writer in a loop).
    s.segment_due = false;
    s.segment_held = true;
    arm_timer(r.session);
  }
  // (A refused segment batch: its channel sends it again after a pause.)
  if (s.waiting)
    request_segment(s, std::exchange(s.waiting, std::nullopt));
  else
    segment_if_due(s);
}

void sqlite_event_writer::forget(std::string_view session_id) {
  {
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(std::string(session_id));
    if (it != sessions_.end()) {
      // A log the channel still holds, or a request in flight, sees the flag; the tail's
      // slot goes with the entry below, so nothing may touch it from here on.
      it->second->forgotten = true;
      sessions_.erase(it);
    }
    // (Its journal records name its incarnation: the fold gives them to no later session.)
    tails_.forget(session_id);
  }
}

bool sqlite_event_writer::retire(std::string_view session_id) {
  std::optional<net::any_io_executor> due;
  {
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(std::string(session_id));
    if (it == sessions_.end()) return true;
    session_state& s = *it->second;
    if (s.journal_in_flight || s.segment_in_flight || s.waiting || s.tail_size > 0) {
      // An idle session's journal-only events (events of no run) need not wait for their
      // age: written now, the session can go at the next try.
      if (!s.segment_in_flight && s.tail_size > 0) {
        s.segment_due = true;
        segment_if_due(s);
      }
      due = std::exchange(submit_due_, std::nullopt);
    } else {
      // Its log is not used again (the caller's promise); were it, the append would fail
      // loudly rather than write beside a newer state of the same session.
      s.forgotten = true;
      sessions_.erase(it);
      tails_.forget(session_id);  // an empty tail: nothing the journal's release needs
      return true;
    }
  }
  submit_due_segments(due);
  return false;
}

}  // namespace agw::persistence
