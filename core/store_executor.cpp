#include "core/store_executor.hpp"

#include <spdlog/spdlog.h>

namespace agw::core {

store_executor::store_executor(connection_factory make_connection, options opts) : opts_(opts) {
  // Open every connection up front so a bad database fails start-up, not the first request.
  connections_.push_back(make_connection());
  for (std::size_t i = 0; i < opts_.readers; ++i) connections_.push_back(make_connection());
  threads_.emplace_back([this] { writer_loop(*connections_[0]); });
  for (std::size_t i = 1; i < connections_.size(); ++i) threads_.emplace_back([this, i] { reader_loop(*connections_[i]); });
}

store_executor::~store_executor() { stop(); }

void store_executor::stop() {
  if (stopping_.exchange(true)) return;
  for (queue* q : {&writes_, &reads_}) {
    std::lock_guard lock(q->mutex);
    q->ready.notify_all();
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
  connections_.clear();
}

void store_executor::push(queue& q, job j) {
  {
    std::unique_lock lock(q.mutex);
    if (!stopping_ && q.jobs.size() < opts_.queue_capacity) {
      q.jobs.push_back(std::move(j));
      const bool was_empty = q.jobs.size() == 1;
      lock.unlock();
      // A busy consumer drains the whole queue anyway: wake it only when it may be asleep.
      if (was_empty || &q == &reads_) q.ready.notify_one();
      return;
    }
  }
  // Overflow policy: refuse at once, never block the caller (an io thread).
  ++rejected_;
  if (stopping_)
    j.finish(std::make_exception_ptr(store_error("storage is shutting down")));
  else
    j.finish(std::make_exception_ptr(store_busy()));
}

void store_executor::writer_loop(store_connection& c) {
  std::vector<job> batch;
  std::vector<std::exception_ptr> errors;
  auto last_commit = std::chrono::steady_clock::now() - opts_.min_commit_interval;
  auto maintenance_due = std::chrono::steady_clock::now() + opts_.maintenance_interval;
  for (;;) {
    batch.clear();
    {
      std::unique_lock lock(writes_.mutex);
      writes_.ready.wait(lock, [&] { return stopping_ || !writes_.jobs.empty(); });
      if (writes_.jobs.empty()) return;  // stopping and drained
      // Group commit under load: at most one commit per interval, so jobs arriving
      // meanwhile share it. After a quiet spell the first job commits at once.
      const auto due = last_commit + opts_.min_commit_interval;
      if (!stopping_ && writes_.jobs.size() < opts_.max_batch && std::chrono::steady_clock::now() < due) {
        lock.unlock();
        std::this_thread::sleep_until(due);
        lock.lock();
      }
      last_commit = std::chrono::steady_clock::now();
      while (!writes_.jobs.empty() && batch.size() < opts_.max_batch) {
        batch.push_back(std::move(writes_.jobs.front()));
        writes_.jobs.pop_front();
      }
    }
    errors.assign(batch.size(), nullptr);
    std::exception_ptr batch_error;
    try {
      c.begin_batch();
      if (opts_.maintenance && last_commit >= maintenance_due) {
        maintenance_due = last_commit + opts_.maintenance_interval;
        run_maintenance(c);
      }
      for (std::size_t i = 0; i < batch.size(); ++i) {
        c.savepoint();
        try {
          batch[i].run(c);
          c.release_savepoint();
        } catch (...) {
          // This job alone is undone; the rest of the batch still commits.
          errors[i] = std::current_exception();
          c.rollback_to_savepoint();
          c.release_savepoint();
        }
      }
      c.commit_batch();
      ++batches_;
      jobs_ += batch.size();
    } catch (...) {
      batch_error = std::current_exception();
      try {
        c.rollback_batch();
      } catch (const std::exception& e) {
        spdlog::error("store: rollback failed: {}", e.what());
      }
    }
    for (std::size_t i = 0; i < batch.size(); ++i) batch[i].finish(batch_error ? batch_error : errors[i]);
  }
}

void store_executor::run_maintenance(store_connection& c) {
  c.savepoint();
  try {
    opts_.maintenance(c);
    c.release_savepoint();
  } catch (const std::exception& e) {
    // Housekeeping may wait for the next interval; the batch's jobs still commit.
    spdlog::warn("store: maintenance failed: {}", e.what());
    c.rollback_to_savepoint();
    c.release_savepoint();
  }
}

void store_executor::reader_loop(store_connection& c) {
  for (;;) {
    job j;
    {
      std::unique_lock lock(reads_.mutex);
      reads_.ready.wait(lock, [&] { return stopping_ || !reads_.jobs.empty(); });
      if (reads_.jobs.empty()) return;
      j = std::move(reads_.jobs.front());
      reads_.jobs.pop_front();
    }
    std::exception_ptr error;
    try {
      j.run(c);
    } catch (...) {
      error = std::current_exception();
    }
    j.finish(error);
  }
}

}  // namespace agw::core
