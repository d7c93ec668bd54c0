#include "persistence/wal_checkpointer.hpp"

#include <spdlog/spdlog.h>

#include "core/thread_name.hpp"
#include "core/thread_priority.hpp"
#include "persistence/sqlite_database.hpp"

namespace agw::persistence {

namespace {
// Past this, the WAL is made to start over (RESTART below): 64 MiB of 4 KiB pages, so
// the short hold it means comes every few seconds at most, even at full load.
constexpr int restart_wal_frames = 16384;
constexpr int large_wal_frames = 65536;  // 256 MiB: worth a warning
// Before a RESTART: PASSIVE passes, at most this many in all, until one found at
// most `small_pass_frames` (4 MiB) not yet copied.
constexpr int catch_up_passes = 4;
constexpr int small_pass_frames = 1024;
}  // namespace

wal_checkpointer::wal_checkpointer(const std::string& db_path, std::chrono::milliseconds interval, int nice)
    : interval_(interval), thread_([this, db_path, nice] { loop(db_path, nice); }) {}

wal_checkpointer::~wal_checkpointer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void wal_checkpointer::loop(const std::string& db_path, int nice) {
  core::name_this_thread("agw-checkpoint");
  if (!core::lower_this_thread_priority(nice)) spdlog::warn("the WAL checkpointer's priority could not be lowered");
  try {
    sqlite_database db(db_path);
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
      lock.unlock();
      int wal_frames = 0, copied = 0;
      int rc = sqlite3_wal_checkpoint_v2(db.handle(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &wal_frames, &copied);
      // Under steady commits a PASSIVE checkpoint never catches the last frame, and the
      // WAL only starts over once one has: it would grow for as long as the load lasts.
      // So past the threshold a RESTART follows, which holds every write back while it
      // waits for readers on older snapshots, copies what is left and syncs. What is left
      // is what the commits added during the last PASSIVE pass: after a long pass (a full
      // WAL at full load) that took a RESTART ~300 ms to copy. More PASSIVE passes first,
      // each copying what came during the one before, until a pass had little to copy.
      for (int pass = 1; rc == SQLITE_OK && wal_frames > restart_wal_frames && pass < catch_up_passes; ++pass) {
        const int copied_before = copied;
        rc = sqlite3_wal_checkpoint_v2(db.handle(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &wal_frames, &copied);
        if (wal_frames - copied_before <= small_pass_frames) break;
      }
      if (rc == SQLITE_OK && wal_frames > restart_wal_frames)
        rc = sqlite3_wal_checkpoint_v2(db.handle(), nullptr, SQLITE_CHECKPOINT_RESTART, &wal_frames, &copied);
      // BUSY only means another checkpoint or a reader held on; anything else is worth a line.
      if (rc != SQLITE_OK && rc != SQLITE_BUSY) spdlog::warn("wal checkpoint failed: {}", sqlite3_errmsg(db.handle()));
      // Readers that never let go would keep the WAL from restarting: say so (the writer's
      // own automatic checkpoint is the backstop, sqlite_database.hpp).
      if (wal_frames > large_wal_frames && copied < wal_frames)
        spdlog::warn("the WAL holds {} pages, {} of them not yet copied back", wal_frames, wal_frames - copied);
      lock.lock();
    }
  } catch (const std::exception& e) {
    // The server keeps working; only the WAL grows until the next start.
    spdlog::error("wal checkpointer stopped: {}", e.what());
  }
}

}  // namespace agw::persistence
