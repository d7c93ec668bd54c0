#pragma once
// The SQLite store of one serving process, assembled: the store executor with
// its connections (one writer with a large page cache, readers), the event
// writer with its journaled tails, the journal cut as the writer's maintenance,
// and the WAL checkpointer thread. The server sees only core's interfaces.
//
// Start-up work comes first, on one connection of its own: prepare_database()
// migrates and folds the journal, then core::recover_at_startup() may run.
//
// Thread-safety: construct and destroy on one thread. stop() finishes every queued
// job; call it before the io_context that job completions go to is destroyed.
#include <memory>
#include <string>

#include "core/storage/storage_backend.hpp"
#include "persistence/journal_tails.hpp"
#include "persistence/sqlite_event_writer.hpp"
#include "persistence/sqlite_store.hpp"
#include "persistence/wal_checkpointer.hpp"

namespace agw::persistence {

// Migrates the schema and moves what only the journal holds into segments (the
// process before stopped with events journal-only). Returns the rows folded.
std::size_t prepare_database(sqlite_store& store);

class sqlite_backend {
 public:
  sqlite_backend(const std::string& db_path, sqlite_event_writer::options events);
  ~sqlite_backend();
  sqlite_backend(const sqlite_backend&) = delete;
  sqlite_backend& operator=(const sqlite_backend&) = delete;

  core::storage_backend backend() { return {*store_, *writer_}; }
  void stop() { store_->stop(); }

 private:
  journal_tails tails_;
  wal_checkpointer checkpointer_;
  std::unique_ptr<core::store_executor> store_;
  std::unique_ptr<sqlite_event_writer> writer_;
};

}  // namespace agw::persistence
