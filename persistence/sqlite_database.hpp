#pragma once
// RAII over the SQLite C API: a connection, prepared statements, and errors as
// store_error. Not thread-safe: one thread uses a connection at a time.
#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "persistence/sqlite_busy_wait.hpp"

namespace agw::persistence {

class statement {
 public:
  statement(sqlite3* db, sqlite3_stmt* stmt, bool owned) : db_(db), stmt_(stmt), owned_(owned) {}
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;
  // Leaves a cached statement reset and unbound for its next user; finalizes an owned one.
  ~statement();

  statement& bind(int index, std::string_view text);
  statement& bind(int index, const std::string& text) { return bind(index, std::string_view(text)); }
  statement& bind(int index, std::int64_t value);
  statement& bind(int index, const std::optional<std::string>& text);
  statement& bind(int index, const std::optional<std::int64_t>& value);
  statement& bind_null(int index);
  statement& bind_blob(int index, std::string_view bytes);

  bool step();  // true: a row is ready
  void run();   // step to completion, expecting no rows

  std::int64_t int64(int column) const;
  std::string text(int column) const;
  std::optional<std::string> optional_text(int column) const;
  std::optional<std::int64_t> optional_int64(int column) const;
  bool is_null(int column) const;

 private:
  void check(int rc) const;
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  bool owned_;
};

class sqlite_database {
 public:
  struct options {
    // Off: commits copy the WAL back themselves only past 256 MiB of it, a backstop;
    // a wal_checkpointer does it, off the writer's path.
    bool auto_checkpoint = true;
    // The page cache in KiB (SQLite's default is 2 MiB). The writer's should hold the
    // pages every commit touches, or each commit reads them back from the WAL.
    int cache_kib = 2048;
  };
  // Opens (creating) the file in WAL mode with foreign keys; a lock another connection
  // holds is waited for up to 5 s, in short steps (persistence/sqlite_busy_wait.hpp).
  explicit sqlite_database(const std::string& path) : sqlite_database(path, options{}) {}
  sqlite_database(const std::string& path, const options& opts);
  ~sqlite_database();
  sqlite_database(const sqlite_database&) = delete;
  sqlite_database& operator=(const sqlite_database&) = delete;

  void exec(const char* sql);
  // A cached prepared statement; one user at a time (statements are not reentrant).
  statement prepare(const char* sql);
  // For SQL built at run time (not cached).
  statement prepare_uncached(const std::string& sql);
  std::int64_t changes() const { return sqlite3_changes64(db_); }
  std::int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
  sqlite3* handle() { return db_; }

 private:
  sqlite3* db_ = nullptr;
  sqlite_busy_wait busy_wait_{std::chrono::milliseconds(5000)};  // outlives db_'s use: closed in the destructor
  std::unordered_map<const char*, sqlite3_stmt*> cache_;
};

// Throws store_error with SQLite's message.
[[noreturn]] void throw_sqlite_error(sqlite3* db, int rc, std::string_view what);

}  // namespace agw::persistence
