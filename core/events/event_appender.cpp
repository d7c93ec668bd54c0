#include "core/events/event_appender.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

namespace agw::core {

namespace net = boost::asio;

event_appender::event_appender(store_executor& store, net::any_io_executor io) : store_(store), io_(std::move(io)) {}

void event_appender::append(request r) {
  {
    std::lock_guard lock(mutex_);
    pending_.push_back(std::move(r));
    if (job_queued_) return;  // the queued job will take this one too
    job_queued_ = true;
  }
  submit();
}

void event_appender::submit() {
  struct taken_batch {
    bool ran = false;
    std::vector<request> requests;
    std::vector<std::exception_ptr> errors;
  };
  auto taken = std::make_shared<taken_batch>();
  // What is pending when the writer reaches the job goes into it: the longer the
  // writer is busy, the more sessions share the job.
  auto job = [this, taken](store_connection& c) {
    {
      std::lock_guard lock(mutex_);
      taken->requests.swap(pending_);
      job_queued_ = false;
    }
    taken->ran = true;
    auto& requests = taken->requests;
    taken->errors.assign(requests.size(), nullptr);
    // Every journal batch of this cycle goes into one row.
    std::vector<const event_batch_record*> journal;
    for (const auto& r : requests)
      if (!r.as_segment) journal.push_back(&r.record);
    if (!journal.empty()) {
      std::exception_ptr error;
      try {
        const auto seq = c.append_journal(journal);
        for (auto& r : requests)
          if (!r.as_segment) r.claim->hold_from(seq);
      } catch (...) {
        error = std::current_exception();
      }
      for (std::size_t i = 0; i < requests.size(); ++i)
        if (!requests[i].as_segment) taken->errors[i] = error;
    }
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (!requests[i].as_segment) continue;
      // A transaction SQLite rolled back itself (disk full, I/O) fails the whole job:
      // nothing after it may be written outside the batch.
      if (!c.batch_open()) throw store_error("the database rolled the write transaction back");
      // One session's refused segment (its session deleted meanwhile, say) spares the
      // others, and is undone whole (segment and retention trim together).
      c.savepoint();
      try {
        write_segment(c, requests[i]);
        c.release_savepoint();
      } catch (...) {
        taken->errors[i] = std::current_exception();
        c.rollback_to_savepoint();
        c.release_savepoint();
      }
    }
  };
  // Urgent: released events must not wait behind a burst of ordinary writes.
  store_.async_write_urgent(std::move(job), net::bind_executor(io_, [this, taken](std::exception_ptr error) {
                       if (!taken->ran) {
                         // Never reached the writer (queue full, shutting down): fail what is pending,
                         // and the channels retry.
                         {
                           std::lock_guard lock(mutex_);
                           taken->requests.swap(pending_);
                           job_queued_ = false;
                         }
                         taken->errors.assign(taken->requests.size(), nullptr);
                       }
                       complete(taken->requests, taken->errors, error);
                     }));
}

void event_appender::write_segment(store_connection& c, const request& r) {
  c.append_segment(r.record);
  const auto keep = static_cast<std::int64_t>(r.retention);
  if (keep > 0 && r.record.last_id > keep) c.trim_events(r.record.session_id, r.record.last_id - keep + 1);
}

void event_appender::complete(std::vector<request>& requests, const std::vector<std::exception_ptr>& errors,
                              std::exception_ptr all) {
  for (std::size_t i = 0; i < requests.size(); ++i) {
    auto error = all ? all : errors[i];
    net::post(requests[i].executor, [done = std::move(requests[i].done), error] { done(error); });
  }
}

}  // namespace agw::core
