#pragma once
// How a connection waits for a lock another connection holds (SQLite's busy
// handler): in short steps, so it takes the lock soon after it is let go.
//
// SQLite's own busy timeout sleeps 1, 2, 5, 10, ... up to 100 ms between tries. The
// WAL checkpointer's RESTART waits that way for the writer's lock (taken and let go
// ~1,000 times a second) and then, holding it, for the readers' snapshots; the
// writer waits for it the same way. Measured under `sseload stream -c 1000 -k 1 -r 0`:
// RESTARTs of 14 ms to 1.7 s and the writer's BEGIN held up to 330 ms
// (docs/streaming.md, "Lock waits in short steps"). Here a wait tries again after
// 50 µs during its first 2 ms, 250 µs up to 50 ms, then every millisecond, and gives
// up (SQLITE_BUSY) after `limit`, as the busy timeout did. (The kernel's timer slack
// makes a 50 µs sleep ~100 µs.)
#include <sqlite3.h>

#include <chrono>

namespace agw::persistence {

class sqlite_busy_wait {
 public:
  explicit sqlite_busy_wait(std::chrono::milliseconds limit) : limit_(limit) {}
  // Installs this as `db`'s busy handler; `this` must outlive the connection's use.
  void install(sqlite3* db);

  // The step to sleep after a wait of `waited` so far.
  static std::chrono::microseconds step_after(std::chrono::steady_clock::duration waited);

  // SQLite's callback (public for the tests): nonzero, try again after a step's sleep;
  // 0, give up. `tries` counts the calls since SQLite last reset it, which it does per
  // statement, not per wait: a call long after the one before (more than
  // `new_wait_gap`) also starts a new wait, so a second wait in one statement gets its
  // own limit.
  static int on_busy(void* self, int tries);
  static constexpr std::chrono::milliseconds new_wait_gap{10};

 private:
  std::chrono::milliseconds limit_;
  std::chrono::steady_clock::time_point began_;      // the current wait's first call
  std::chrono::steady_clock::time_point last_call_;  // the latest call
};

}  // namespace agw::persistence
