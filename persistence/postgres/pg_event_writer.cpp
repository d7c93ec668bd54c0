#include "persistence/postgres/pg_event_writer.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include "core/events/log_codec.hpp"
#include "core/time_format.hpp"
#include "persistence/postgres/pg_run_leases.hpp"
#include "persistence/postgres/pg_store.hpp"

namespace agw::persistence::pg {

namespace net = boost::asio;

namespace {

void post_done(core::event_log_writer::batch& b, std::exception_ptr error) {
  if (b.done) net::post(b.executor, [done = std::move(b.done), error] { done(error); });
}

core::event_batch_record row_of(const std::string& session_id, const core::event_log_writer::batch& b) {
  return {session_id, b.events.front()->id, b.events.back()->id, core::encode_log_frames(b.events), core::now_ms()};
}

}  // namespace

std::shared_ptr<core::event_log_writer::session_log> pg_event_writer::open(const std::string& session_id,
                                                                           const std::string& /*thread_id*/) {
  std::lock_guard lock(mutex_);
  auto& s = sessions_[session_id];
  if (!s) s = std::make_shared<session_state>(*this, session_id);
  return s;
}

void pg_event_writer::forget(std::string_view session_id) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(std::string(session_id));
  if (it == sessions_.end()) return;
  it->second->forgotten = true;
  sessions_.erase(it);
}

bool pg_event_writer::retire(std::string_view session_id) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(std::string(session_id));
  if (it == sessions_.end()) return true;
  // Its log is not used again (the caller's promise); were it, the append would fail
  // loudly, as SQLite's does.
  it->second->forgotten = true;
  sessions_.erase(it);
  return true;
}

void pg_event_writer::append_to(session_state& s, batch b) {
  const auto executor = b.executor;
  bool queue_job = false;
  {
    std::lock_guard lock(mutex_);
    if (s.forgotten) {
      // Deleted (session_hub::session_deleted forgets it at once): nothing is written; the
      // channel, closed or closing, ignores the error or retries until it stores nothing.
      post_done(b, std::make_exception_ptr(core::store_error("the session was deleted")));
      return;
    }
    pending_.push_back({s.shared_from_this(), std::move(b)});
    queue_job = !std::exchange(job_queued_, true);
  }
  // The job takes whatever is pending when the writer reaches it, this batch included.
  if (queue_job) submit(executor);
}

void pg_event_writer::submit(const net::any_io_executor& completion_executor) {
  auto taken = std::make_shared<taken_job>();
  auto job = [this, taken](core::store_connection& c) { run_job(c, *taken); };
  // Runs after the commit, on the first batch's executor; each batch's `done` then
  // goes to its own.
  auto on_done = [this, taken](std::exception_ptr all) {
    if (!taken->ran) {
      // Never reached the writer (queue full, shutting down): fail what is pending, and
      // the channels retry.
      std::lock_guard lock(mutex_);
      taken->requests.swap(pending_);
      job_queued_ = false;
    }
    taken->errors.resize(taken->requests.size());
    for (std::size_t i = 0; i < taken->requests.size(); ++i) post_done(taken->requests[i].b, all ? all : taken->errors[i]);
  };
  // Urgent: released events must not wait behind a burst of ordinary writes.
  store_.async_write_urgent(std::move(job), net::bind_executor(completion_executor, std::move(on_done)));
}

void pg_event_writer::run_job(core::store_connection& c, taken_job& job) {
  {
    std::lock_guard lock(mutex_);
    job.requests.swap(pending_);
    job_queued_ = false;
  }
  job.ran = true;
  job.errors.assign(job.requests.size(), nullptr);
  auto& store = static_cast<pg_store&>(c);  // this executor's connections are PostgreSQL's (pg_backend)
  // Fenced batches (a run's, core/storage/run_leases.hpp) go in only while their token
  // holds the session's lease: one statement checks (and share-locks) every fence of the
  // cycle, so a takeover either committed before (the batch is refused) or waits for
  // this commit. The rest are fenced_out and never written.
  std::vector<std::pair<std::string, std::int64_t>> fences;
  std::vector<std::size_t> fenced_index;
  for (std::size_t i = 0; i < job.requests.size(); ++i)
    if (job.requests[i].b.fence != 0) {
      fences.emplace_back(job.requests[i].session->session_id, job.requests[i].b.fence);
      fenced_index.push_back(i);
    }
  if (!fences.empty()) {
    std::vector<bool> held;
    c.savepoint();
    try {
      held = leases_held(store.db(), fences);
      c.release_savepoint();  // the row locks stay until the commit
    } catch (...) {
      // Not known: every batch of the cycle is retried.
      for (auto& e : job.errors) e = std::current_exception();
      c.rollback_to_savepoint();
      c.release_savepoint();
      return;
    }
    for (std::size_t k = 0; k < fenced_index.size(); ++k)
      if (!held[k]) job.errors[fenced_index[k]] = std::make_exception_ptr(core::fenced_out("the session's run lease was taken"));
  }
  // The common case: every row in one statement (one round trip), retention trims after.
  std::vector<core::event_batch_record> rows;
  std::vector<const request*> writing;
  for (std::size_t i = 0; i < job.requests.size(); ++i)
    if (!job.errors[i]) {
      rows.push_back(row_of(job.requests[i].session->session_id, job.requests[i].b));
      writing.push_back(&job.requests[i]);
    }
  if (rows.empty()) return;
  c.savepoint();
  try {
    store.append_event_rows(rows);
    for (const auto* w : writing) {
      const auto& r = *w;
      if (r.b.fence != 0 && r.b.ends_run) mark_run_ended(store.db(), r.session->session_id, r.b.fence);
      const auto keep = static_cast<std::int64_t>(r.b.retention);
      const auto last = r.b.events.back()->id;
      if (keep > 0 && last > keep) c.trim_events(r.session->session_id, last - keep + 1);
    }
    c.release_savepoint();
    return;
  } catch (...) {
    c.rollback_to_savepoint();
    c.release_savepoint();
  }
  // One row was refused (its session deleted meanwhile, say): each on its own, so the
  // others still commit.
  for (std::size_t i = 0; i < job.requests.size(); ++i) {
    if (job.errors[i]) continue;  // fenced out
    c.savepoint();
    try {
      write_one(c, job.requests[i]);
      if (job.requests[i].b.fence != 0 && job.requests[i].b.ends_run)
        mark_run_ended(store.db(), job.requests[i].session->session_id, job.requests[i].b.fence);
      c.release_savepoint();
    } catch (...) {
      job.errors[i] = std::current_exception();
      c.rollback_to_savepoint();
      c.release_savepoint();
    }
  }
}

void pg_event_writer::write_one(core::store_connection& c, const request& r) {
  c.append_events(row_of(r.session->session_id, r.b));
  const auto keep = static_cast<std::int64_t>(r.b.retention);
  const auto last = r.b.events.back()->id;
  if (keep > 0 && last > keep) c.trim_events(r.session->session_id, last - keep + 1);
}

}  // namespace agw::persistence::pg
