#pragma once
// Copies the WAL back into the database file on its own thread and connection,
// so that the writer's commits never wait for a checkpoint's reads, writes and
// fsyncs (SQLite's automatic checkpoint runs inside the committing call).
//
// The server's connections checkpoint themselves only as a backstop (past
// 256 MiB of WAL); this thread runs a PASSIVE checkpoint every `interval` (it
// never blocks the writer or the readers, and copies what no reader still
// needs), and once the WAL holds more than 64 MiB a RESTART right after it, so
// the WAL starts over even under steady commits (a short hold of the next
// write). Stopped by its destructor. Thread-safety: construct and destroy on one
// thread; nothing else.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace agw::persistence {

class wal_checkpointer {
 public:
  // `nice`: the thread's nice value above the process's (core/thread_priority.hpp).
  wal_checkpointer(const std::string& db_path, std::chrono::milliseconds interval, int nice = 0);
  ~wal_checkpointer();
  wal_checkpointer(const wal_checkpointer&) = delete;
  wal_checkpointer& operator=(const wal_checkpointer&) = delete;

 private:
  void loop(const std::string& db_path, int nice);

  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace agw::persistence
