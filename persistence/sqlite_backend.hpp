#pragma once
// The SQLite store of one serving process, assembled: the store executor with
// its connections (one writer with a large page cache, readers), the event
// writer with its journal files (`<db>-events/`) and journaled tails, and the WAL
// checkpointer thread. The server sees only core's interfaces.
//
// Start-up work comes first, on one connection of its own: prepare_database()
// migrates and folds the journal, then core::recover_at_startup() may run.
//
// Thread-safety: construct and destroy on one thread. stop() finishes every queued
// job; call it before the io_context that job completions go to is destroyed.
#include <filesystem>
#include <memory>
#include <string>

#include "core/storage/storage_backend.hpp"
#include "persistence/journal_file.hpp"
#include "persistence/journal_tails.hpp"
#include "persistence/sqlite_event_writer.hpp"
#include "persistence/sqlite_store.hpp"
#include "persistence/wal_checkpointer.hpp"

namespace agw::persistence {

// Migrates the schema and moves what only the event journal in `journal_dir`
// holds into segments (the process before stopped with events journal-only), then
// removes the journal's files. Returns the journal records folded.
std::size_t prepare_database(sqlite_store& store, const std::filesystem::path& journal_dir);

class sqlite_backend {
 public:
  // `background_nice`: the nice value, above the process's, of the store's writer and the
  // WAL checkpointer (GATEWAY_STORE_WRITER_NICE; core/thread_priority.hpp).
  sqlite_backend(const std::string& db_path, sqlite_event_writer::options events, int background_nice = 0);
  ~sqlite_backend();
  sqlite_backend(const sqlite_backend&) = delete;
  sqlite_backend& operator=(const sqlite_backend&) = delete;

  core::storage_backend backend() { return {*store_, *writer_}; }
  // Writes what is pending and stops the threads; every later write fails.
  void stop();

 private:
  journal_tails tails_;
  wal_checkpointer checkpointer_;
  journal_file journal_;  // the event writer's from construction on (under its journal lock)
  std::unique_ptr<core::store_executor> store_;
  std::unique_ptr<sqlite_event_writer> writer_;
};

}  // namespace agw::persistence
