#include "persistence/wal_checkpointer.hpp"

#include <spdlog/spdlog.h>

#include "core/thread_name.hpp"
#include "persistence/sqlite_database.hpp"

namespace agw::persistence {

wal_checkpointer::wal_checkpointer(const std::string& db_path, std::chrono::milliseconds interval)
    : interval_(interval), thread_([this, db_path] { loop(db_path); }) {}

wal_checkpointer::~wal_checkpointer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void wal_checkpointer::loop(const std::string& db_path) {
  core::name_this_thread("agw-checkpoint");
  try {
    sqlite_database db(db_path);
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
      lock.unlock();
      int wal_frames = 0, copied = 0;
      const int rc = sqlite3_wal_checkpoint_v2(db.handle(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &wal_frames, &copied);
      // BUSY only means another checkpoint was running; anything else is worth a line.
      if (rc != SQLITE_OK && rc != SQLITE_BUSY) spdlog::warn("wal checkpoint failed: {}", sqlite3_errmsg(db.handle()));
      lock.lock();
    }
  } catch (const std::exception& e) {
    // The server keeps working; only the WAL grows until the next start.
    spdlog::error("wal checkpointer stopped: {}", e.what());
  }
}

}  // namespace agw::persistence
