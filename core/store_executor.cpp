#include "core/store_executor.hpp"

#include <spdlog/spdlog.h>

#include "core/thread_name.hpp"
#include "core/thread_priority.hpp"

namespace agw::core {

store_executor::store_executor(connection_factory make_connection, options opts) : opts_(opts) {
  // Open every connection up front so a bad database fails start-up, not the first request.
  connections_.push_back(make_connection(connection_role::writer));
  for (std::size_t i = 0; i < opts_.readers; ++i) connections_.push_back(make_connection(connection_role::reader));
  threads_.emplace_back([this] {
    name_this_thread("agw-writer");
    if (!lower_this_thread_priority(opts_.writer_nice)) spdlog::warn("the store writer's priority could not be lowered");
    writer_loop(*connections_[0]);
  });
  for (std::size_t i = 1; i < connections_.size(); ++i)
    threads_.emplace_back([this, i] {
      name_this_thread("agw-reader-" + std::to_string(i));
      reader_loop(*connections_[i]);
    });
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

void store_executor::push(queue_kind kind, job j) {
  queue& q = kind == queue_kind::read ? reads_ : writes_;
  auto& jobs = kind == queue_kind::urgent_write ? q.urgent : q.jobs;
  {
    std::unique_lock lock(q.mutex);
    if (!stopping_ && jobs.size() < opts_.queue_capacity) {
      jobs.push_back(std::move(j));
      const bool was_empty = q.jobs.size() + q.urgent.size() == 1;
      lock.unlock();
      // A busy consumer drains the whole queue anyway: wake it only when it may be asleep.
      if (was_empty || &q == &reads_) q.ready.notify_one();
      return;
    }
  }
  // Overflow policy: refuse at once, never block the caller (an io thread).
  ++rejected_;
  if (stopping_)
    j.finish(std::make_exception_ptr(store_error("storage is shutting down")), nullptr);
  else
    j.finish(std::make_exception_ptr(store_busy()), nullptr);
}

void store_executor::writer_loop(store_connection& c) {
  std::vector<job> batch;
  std::vector<std::exception_ptr> errors;
  writer_state w{commit_pacer(opts_.min_commit_interval)};
  std::size_t urgent = 0;
  while (take_batch(w, batch, urgent)) {
    errors.assign(batch.size(), nullptr);
    std::exception_ptr batch_error;
    std::size_t ran = 0;  // jobs of the batch that ran; the rest go back to the queue
    try {
      ran = run_batch(c, batch, urgent, errors);
    } catch (...) {
      batch_error = std::current_exception();
      try {
        c.rollback_batch();
      } catch (const std::exception& e) {
        spdlog::error("store: rollback failed: {}", e.what());
      }
    }
    // Cut by the budget: the rest waits for the next batch. A failed batch fails every job.
    w.cut_short = !batch_error && ran < batch.size();
    if (w.cut_short) {
      // Back to the front of the queue, in their order.
      std::lock_guard lock(writes_.mutex);
      for (std::size_t i = batch.size(); i > ran; --i) writes_.jobs.push_front(std::move(batch[i - 1]));
      batch.resize(ran);
    }
    // One hand-over per io thread for the batch's completions on its strands (the rest are
    // posted): a commit of a burst of new runs is run in slices there, not queued whole.
    completion_fanout completions;
    for (std::size_t i = 0; i < batch.size(); ++i) batch[i].finish(batch_error ? batch_error : errors[i], &completions);
    completions.hand_over_all();
  }
}

bool store_executor::take_batch(writer_state& w, std::vector<job>& batch, std::size_t& urgent) {
  batch.clear();
  std::unique_lock lock(writes_.mutex);
  auto queued = [&] { return writes_.jobs.size() + writes_.urgent.size(); };
  // Group commit under load: at most one commit per interval (commit_pacer.hpp).
  if (!w.pacer.wait_turn(
          lock, writes_.ready, [&] { return queued() > 0; }, [&] { return stopping_.load(); },
          [&] { return w.cut_short || queued() >= opts_.max_batch; }))
    return false;  // stopping and drained
  for (auto* from : {&writes_.urgent, &writes_.jobs}) {
    while (!from->empty() && batch.size() < opts_.max_batch) {
      batch.push_back(std::move(from->front()));
      from->pop_front();
    }
    if (from == &writes_.urgent) urgent = batch.size();
  }
  return true;
}

std::size_t store_executor::run_batch(store_connection& c, std::vector<job>& batch, std::size_t urgent,
                                      std::vector<std::exception_ptr>& errors) {
  std::size_t ran = 0;
  const auto started = std::chrono::steady_clock::now();
  c.begin_batch();
  auto ordinary_from = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    // Past the budget, ordinary jobs wait for the next commit (one always runs); the
    // budget counts ordinary work only.
    if (i == urgent) ordinary_from = std::chrono::steady_clock::now();
    if (i > urgent && std::chrono::steady_clock::now() - ordinary_from >= opts_.batch_budget) break;
    ran = i + 1;
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
    // SQLite rolls the whole transaction back itself on some errors (disk full, I/O):
    // then nothing of the batch is stored, and no later job may run outside it.
    if (!c.batch_open()) throw store_error("the database rolled the write transaction back");
  }
  c.commit_batch();
  commit_seconds_.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  ++batches_;
  jobs_ += ran;
  return ran;
}

std::size_t store_executor::queue_depth() {
  std::size_t depth = 0;
  for (auto* q : {&writes_, &reads_}) {
    std::lock_guard lock(q->mutex);
    depth += q->jobs.size() + q->urgent.size();
  }
  return depth;
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
    j.finish(error, nullptr);
  }
}

}  // namespace agw::core
