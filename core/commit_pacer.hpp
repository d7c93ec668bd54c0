#pragma once
// When a writer thread that commits in batches (group commit) starts its next
// commit: at once after a quiet spell, otherwise at least `interval` after the
// last one, so that what arrives meanwhile shares the commit. Used by the store
// executor's writer (SQLite transactions) and the event journal's appender
// (file appends): one rule, one place.
//
// Under a dense load (jobs keep coming before the next commit is due) the writer
// sleeps until that time and looks, instead of waiting to be woken by the next job
// and then sleeping out the rest of the interval: one wake-up per commit, and no
// futex wake paid by the thread that queued the job. Once a look finds nothing the
// load counts as sparse and the writer waits to be woken again, so a sparse load
// does not pay a wake-up for every empty look.
//
// Thread-safety: owned by one writer thread; wait_turn() is called with the queue's
// lock held and may release it while it sleeps.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace agw::core {

class commit_pacer {
 public:
  using clock = std::chrono::steady_clock;

  explicit commit_pacer(std::chrono::microseconds interval);

  // Waits until something is queued and the next commit may start, then counts that
  // moment as the commit's start. `queued` and `stopping` are read under `lock`;
  // `ready` is notified by whoever queues into an empty queue (and by stop). `hurry`
  // (none: never): once something is queued, whether to commit without waiting for
  // more (the last batch left work behind, or the queue is full enough already).
  // Returns false when stopping with nothing queued.
  bool wait_turn(std::unique_lock<std::mutex>& lock, std::condition_variable& ready, const std::function<bool()>& queued,
                 const std::function<bool()>& stopping, const std::function<bool()>& hurry = {});

 private:
  std::chrono::microseconds interval_;
  clock::time_point last_commit_;
  bool dense_ = false;  // the last job came before its commit was due: look at the next due time
};

}  // namespace agw::core
