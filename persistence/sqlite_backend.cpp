#include "persistence/sqlite_backend.hpp"

#include "persistence/migrations.hpp"

namespace agw::persistence {

std::size_t prepare_database(sqlite_store& store, const std::filesystem::path& journal_dir) {
  migrate(store.database());
  // Everything after this reads segments: without the fold, replays and run repair would
  // miss committed events.
  store.begin_batch();
  std::size_t folded = 0;
  try {
    folded = store.fold_journal(journal_dir);
    store.commit_batch();
  } catch (...) {
    store.rollback_batch();
    throw;
  }
  // Only once the segments have committed (a crash before this folds the files again,
  // which writes nothing twice).
  journal_file::remove_all(journal_dir);
  return folded;
}

sqlite_backend::sqlite_backend(const std::string& db_path, sqlite_event_writer::options events, int background_nice)
    // Checkpoints run on their own thread, never inside a commit (wal_checkpointer.hpp).
    : checkpointer_(db_path, std::chrono::milliseconds(200), background_nice), journal_(journal_dir_for(db_path), {}) {
  using role = core::store_executor::connection_role;
  core::store_executor::options opts;
  opts.writer_nice = background_nice;
  auto connect = [this, db_path](role r) {
    sqlite_database::options db;
    db.auto_checkpoint = false;
    // The writer keeps every page its commits touch (the sessions' log tails).
    if (r == role::writer) db.cache_kib = 32 * 1024;
    return std::make_unique<sqlite_store>(db_path, db, &tails_);
  };
  store_ = std::make_unique<core::store_executor>(connect, opts);
  writer_ = std::make_unique<sqlite_event_writer>(*store_, tails_, journal_, events);
}

sqlite_backend::~sqlite_backend() { stop(); }

void sqlite_backend::stop() {
  // The journal's last cycle may queue segments; jobs still queued point into the
  // writer: finish them before it goes.
  writer_->stop();
  store_->stop();
}

}  // namespace agw::persistence
