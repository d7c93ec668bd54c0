#include "persistence/sqlite_backend.hpp"

#include "persistence/migrations.hpp"

namespace agw::persistence {

std::size_t prepare_database(sqlite_store& store) {
  migrate(store.database());
  // Everything after this reads segments: without the fold, replays and run repair would
  // miss committed events.
  store.begin_batch();
  try {
    const auto folded = store.fold_journal();
    store.commit_batch();
    return folded;
  } catch (...) {
    store.rollback_batch();
    throw;
  }
}

sqlite_backend::sqlite_backend(const std::string& db_path, sqlite_event_writer::options events)
    // Checkpoints run on their own thread, never inside a commit (wal_checkpointer.hpp).
    : checkpointer_(db_path, std::chrono::milliseconds(200)) {
  using role = core::store_executor::connection_role;
  core::store_executor::options opts;
  // The journal is cut below the oldest row some session's tail still needs (journal_tails.hpp).
  opts.maintenance = [this](core::store_connection& c) { static_cast<sqlite_store&>(c).truncate_journal(tails_.oldest_claim()); };
  opts.maintenance_interval = std::chrono::milliseconds(100);
  auto connect = [this, db_path](role r) {
    sqlite_database::options db;
    db.auto_checkpoint = false;
    // The writer keeps every page its commits touch (the sessions' log tails).
    if (r == role::writer) db.cache_kib = 32 * 1024;
    return std::make_unique<sqlite_store>(db_path, db, &tails_);
  };
  store_ = std::make_unique<core::store_executor>(connect, opts);
  writer_ = std::make_unique<sqlite_event_writer>(*store_, tails_, events);
}

sqlite_backend::~sqlite_backend() {
  // Jobs still queued point into the writer: finish them before it goes.
  store_->stop();
}

}  // namespace agw::persistence
