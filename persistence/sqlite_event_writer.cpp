#include "persistence/sqlite_event_writer.hpp"

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <random>

#include "core/events/log_codec.hpp"
#include "core/time_format.hpp"
#include "persistence/sqlite_store.hpp"

namespace agw::persistence {

namespace net = boost::asio;

namespace {

// Spreads sessions' segment writes over time (below); not for anything that must be unpredictable.
std::size_t random_below(std::size_t n) {
  thread_local std::minstd_rand jitter(std::random_device{}());
  return n == 0 ? 0 : jitter() % n;
}

}  // namespace

sqlite_event_writer::sqlite_event_writer(core::store_executor& store, journal_tails& tails, options opts)
    : store_(store), tails_(tails), opts_(opts) {}

sqlite_event_writer::~sqlite_event_writer() = default;

std::shared_ptr<core::event_log_writer::session_log> sqlite_event_writer::open(const std::string& session_id) {
  std::lock_guard lock(mutex_);
  auto& s = sessions_[session_id];
  if (!s) s = std::make_shared<session_state>(*this, session_id, tails_.open(session_id));
  return s;
}

void sqlite_event_writer::append_to(session_state& s, batch b) {
  std::optional<net::any_io_executor> to_submit;
  {
    std::lock_guard lock(mutex_);
    if (s.forgotten) {
      // Deleted (session_hub::session_deleted forgets it at once): nothing is written; the
      // channel, closed or closing, ignores the error or retries until it stores nothing.
      if (b.done)
        net::post(b.executor,
                  [done = std::move(b.done)] { done(std::make_exception_ptr(core::store_error("the session was deleted"))); });
      return;
    }
    s.retention = b.retention;
    if (!s.executor) s.executor = b.executor;  // the channel's strand: the same for every batch
    if (s.in_flight)
      s.waiting = std::move(b);  // behind the tail segment in flight
    else
      dispatch(s, std::move(b));
    to_submit = std::exchange(submit_due_, std::nullopt);
  }
  // Outside the lock: the writer thread this wakes takes mutex_ first thing in the job.
  if (to_submit) submit(*to_submit);
}

void sqlite_event_writer::dispatch(session_state& s, batch b) {
  s.in_flight = true;
  request r;
  r.session = s.shared_from_this();
  r.b = std::move(b);
  // A segment when the journaled tail is big or old enough, or the run ends (an idle
  // session then holds nothing journal-only); otherwise one cheap journal append.
  // The size threshold is drawn per tail (options), as the age is: runs that
  // started together (paced at one rate) would otherwise all reach it in the same cycle,
  // and that cycle's commit, carrying every one of their segments, stalls every stream.
  if (s.tail_size == 0) {
    const auto low = std::min(opts_.segment_frames_min, opts_.segment_frames);
    s.segment_threshold = low + random_below(opts_.segment_frames - low + 1);
  }
  r.as_segment = r.b.ends_run || (s.segment_due && s.tail_size > 0) || s.tail_size + r.b.events.size() >= s.segment_threshold;
  if (r.as_segment && s.tail_size > 0) r.tail = tails_.tail(*s.tail);
  enqueue(std::move(r));
}

void sqlite_event_writer::enqueue(request r) {
  pending_.push_back(std::move(r));
  if (job_queued_) return;  // the queued job will take this one too
  job_queued_ = true;
  // Submitted by the caller once it has let go of mutex_.
  submit_due_ = pending_.back().b.executor;
}

void sqlite_event_writer::enqueue_tail_segment(session_state& s) {
  s.in_flight = true;
  request r;
  r.session = s.shared_from_this();
  r.b.retention = s.retention;
  r.b.executor = s.executor;
  r.as_segment = true;
  r.tail = tails_.tail(*s.tail);
  enqueue(std::move(r));
}

void sqlite_event_writer::submit(net::any_io_executor completion_executor) {
  auto taken = std::make_shared<taken_batch>();
  auto job = [this, taken](core::store_connection& c) { run_job(c, *taken); };
  // Urgent: released events must not wait behind a burst of ordinary writes. Each
  // request's completion then goes to its own session's executor.
  auto on_done = [this, taken](std::exception_ptr all) {
    if (!taken->ran) {
      // Never reached the writer (queue full, shutting down): fail what is pending, and
      // the channels retry.
      std::lock_guard lock(mutex_);
      taken->requests.swap(pending_);
      job_queued_ = false;
    }
    taken->errors.resize(taken->requests.size());
    for (std::size_t i = 0; i < taken->requests.size(); ++i) completed(taken->requests[i], all ? all : taken->errors[i]);
  };
  store_.async_write_urgent(std::move(job), net::bind_executor(completion_executor, std::move(on_done)));
}

void sqlite_event_writer::run_job(core::store_connection& c, taken_batch& taken) {
  // What is pending when the writer reaches the job goes into it: the longer the writer
  // is busy, the more sessions share the job.
  {
    std::lock_guard lock(mutex_);
    taken.requests.swap(pending_);
    job_queued_ = false;
  }
  taken.ran = true;
  taken.errors.assign(taken.requests.size(), nullptr);
  write_journal(c, taken);
  for (std::size_t i = 0; i < taken.requests.size(); ++i) {
    if (!taken.requests[i].as_segment) continue;
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

void sqlite_event_writer::write_journal(core::store_connection& c, taken_batch& taken) {
  // Every journal batch of this cycle goes into one row.
  std::vector<core::event_batch_record> records;
  std::vector<std::size_t> journaled;
  for (std::size_t i = 0; i < taken.requests.size(); ++i) {
    const auto& r = taken.requests[i];
    if (r.as_segment) continue;
    records.push_back({r.session->session_id, r.b.events.front()->id, r.b.events.back()->id, core::encode_log_frames(r.b.events),
                       core::now_ms()});
    journaled.push_back(i);
  }
  if (records.empty()) return;
  std::exception_ptr error;
  try {
    std::vector<const core::event_batch_record*> rows;
    for (const auto& r : records) rows.push_back(&r);
    // This executor's connections are SQLite's (sqlite_backend builds them).
    const auto seq = static_cast<sqlite_store&>(c).append_journal(rows);
    for (auto i : journaled) tails_.claim(*taken.requests[i].session->tail, seq);
  } catch (...) {
    error = std::current_exception();
  }
  for (auto i : journaled) taken.errors[i] = error;
}

void sqlite_event_writer::write_segment(core::store_connection& c, const request& r) {
  std::vector<core::frame_ptr> events = r.tail;
  events.insert(events.end(), r.b.events.begin(), r.b.events.end());
  if (events.empty()) return;
  c.append_events(
      {r.session->session_id, events.front()->id, events.back()->id, core::encode_log_frames(events), core::now_ms()});
  const auto keep = static_cast<std::int64_t>(r.b.retention);
  if (keep > 0 && events.back()->id > keep) c.trim_events(r.session->session_id, events.back()->id - keep + 1);
}

void sqlite_event_writer::completed(request& r, std::exception_ptr error) {
  std::optional<net::any_io_executor> to_submit;
  {
    std::lock_guard lock(mutex_);
    settle(r, error);
    to_submit = std::exchange(submit_due_, std::nullopt);
  }
  if (to_submit) submit(*to_submit);
  if (r.b.done) net::post(r.b.executor, [done = std::move(r.b.done), error] { done(error); });
}

void sqlite_event_writer::settle(const request& r, std::exception_ptr error) {
  auto& s = *r.session;
  s.in_flight = false;
  if (s.forgotten) {
    // Deleted meanwhile: nothing of it is kept, not even the claim its job took. A batch
    // still waiting hears so (its channel is closed and ignores it).
    if (s.waiting && s.waiting->done)
      net::post(s.waiting->executor, [done = std::move(s.waiting->done)] {
        done(std::make_exception_ptr(core::store_error("the session was deleted")));
      });
    s.waiting.reset();
    return;
  }
  if (!error && r.as_segment) {
    // Every journaled event of the session is in a segment now: the journal may drop them.
    tails_.segmented(*s.tail);
    s.tail_size = 0;
    s.segment_due = false;
  } else if (error && r.as_segment && r.b.events.empty()) {
    // The age timer's segment was refused: try again after another age, not at once (a
    // persistent refusal would otherwise hold the writer in a loop).
    s.segment_due = false;
    arm_timer(r.session);
  } else if (!error) {
    // The tail's first events start its age.
    s.tail_size = tails_.add(*s.tail, r.b.events) + r.b.events.size();
    if (s.tail_size == r.b.events.size()) arm_timer(r.session);
  }
  if (s.waiting)
    dispatch(s, *std::exchange(s.waiting, std::nullopt));
  else if (s.segment_due && s.tail_size > 0)
    enqueue_tail_segment(s);
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
  std::optional<net::any_io_executor> to_submit;
  {
    std::lock_guard lock(mutex_);
    auto s = session.lock();
    if (!s || s->forgotten || s->timer_generation != generation || s->tail_size == 0) return;
    s->segment_due = true;
    // Idle: write the tail now; otherwise the batch in flight's completion does.
    if (!s->in_flight) enqueue_tail_segment(*s);
    to_submit = std::exchange(submit_due_, std::nullopt);
  }
  if (to_submit) submit(*to_submit);
}

void sqlite_event_writer::forget(std::string_view session_id) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(std::string(session_id));
  if (it != sessions_.end()) {
    // A log the channel still holds, or a request in flight, sees the flag; the tail's
    // slot goes with the entry below, so nothing may touch it from here on.
    it->second->forgotten = true;
    sessions_.erase(it);
  }
  tails_.forget(session_id);
}

bool sqlite_event_writer::retire(std::string_view session_id) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(std::string(session_id));
  if (it == sessions_.end()) return true;
  session_state& s = *it->second;
  if (s.in_flight || s.waiting || s.tail_size > 0) return false;
  // Its log is not used again (the caller's promise); were it, the append would fail
  // loudly rather than write beside a newer state of the same session.
  s.forgotten = true;
  sessions_.erase(it);
  tails_.forget(session_id);  // an empty tail with no claim: nothing the journal's cut needs
  return true;
}

}  // namespace agw::persistence
