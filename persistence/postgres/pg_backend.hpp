#pragma once
// The PostgreSQL store of one serving process, assembled: the store executor with
// its connections (one writer, readers, each on its own thread) and the event
// writer. The server sees only core's interfaces.
//
// Start-up work comes first, on one connection of its own: prepare_database()
// migrates, then core::recover_at_startup() may run.
//
// Thread-safety: construct and destroy on one thread. stop() finishes every queued
// job; call it before the io_context that job completions go to is destroyed.
#include <chrono>
#include <memory>
#include <string>

#include "core/storage/storage_backend.hpp"
#include "persistence/postgres/pg_event_writer.hpp"
#include "persistence/postgres/pg_store.hpp"

namespace agw::persistence::pg {

// Migrates the schema (every node may call it; they take turns).
void prepare_database(pg_store& store);

class pg_backend {
 public:
  // `node_id`: this node's name on its webhook claims (pg_store). `writer_nice`: the store
  // writer's nice value above the process's (GATEWAY_STORE_WRITER_NICE).
  explicit pg_backend(const std::string& url, const std::string& node_id = "", int writer_nice = 0);
  ~pg_backend();
  pg_backend(const pg_backend&) = delete;
  pg_backend& operator=(const pg_backend&) = delete;

  core::storage_backend backend() { return {*store_, *writer_}; }
  void stop() { store_->stop(); }

 private:
  std::unique_ptr<core::store_executor> store_;
  std::unique_ptr<pg_event_writer> writer_;
};

}  // namespace agw::persistence::pg
