#include "persistence/sqlite_database.hpp"

#include "core/storage/store_error.hpp"

namespace agw::persistence {

void throw_sqlite_error(sqlite3* db, int rc, std::string_view what) {
  std::string message(what);
  message += ": ";
  message += db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  throw core::store_error(message);
}

statement::~statement() {
  if (owned_) {
    sqlite3_finalize(stmt_);
    return;
  }
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

void statement::check(int rc) const {
  if (rc != SQLITE_OK) throw_sqlite_error(db_, rc, "bind");
}

statement& statement::bind(int index, std::string_view text) {
  check(sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT));
  return *this;
}
statement& statement::bind(int index, std::int64_t value) {
  check(sqlite3_bind_int64(stmt_, index, value));
  return *this;
}
statement& statement::bind(int index, const std::optional<std::string>& text) {
  return text ? bind(index, std::string_view(*text)) : bind_null(index);
}
statement& statement::bind(int index, const std::optional<std::int64_t>& value) {
  return value ? bind(index, *value) : bind_null(index);
}
statement& statement::bind_null(int index) {
  check(sqlite3_bind_null(stmt_, index));
  return *this;
}
statement& statement::bind_blob(int index, std::string_view bytes) {
  check(sqlite3_bind_blob(stmt_, index, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT));
  return *this;
}

bool statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw_sqlite_error(db_, rc, "step");
}

void statement::run() {
  while (step()) {
  }
}

std::int64_t statement::int64(int column) const { return sqlite3_column_int64(stmt_, column); }

std::string statement::text(int column) const {
  const auto* p = sqlite3_column_blob(stmt_, column);
  int n = sqlite3_column_bytes(stmt_, column);
  return p ? std::string(static_cast<const char*>(p), static_cast<std::size_t>(n)) : std::string();
}

std::optional<std::string> statement::optional_text(int column) const {
  if (is_null(column)) return std::nullopt;
  return text(column);
}

std::optional<std::int64_t> statement::optional_int64(int column) const {
  if (is_null(column)) return std::nullopt;
  return int64(column);
}

bool statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

namespace {
// Process-wide SQLite settings, before the first connection initialises the library.
// Memory statistics off: with them on, every allocation SQLite makes takes one global
// mutex, which the writer, the readers and the WAL checkpointer all contend for.
void configure_sqlite_once() {
  static const int configured = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  (void)configured;  // SQLITE_MISUSE when something initialised SQLite first: statistics stay on
}
}  // namespace

sqlite_database::sqlite_database(const std::string& path, const options& opts) {
  configure_sqlite_once();
  int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = "cannot open database '" + path + "'";
    if (db_) {
      message += ": ";
      message += sqlite3_errmsg(db_);
      sqlite3_close(db_);
    }
    throw core::store_error(message);
  }
  sqlite3_extended_result_codes(db_, 1);
  // Writers queue behind each other (and the checkpointer's RESTART) for up to 5 s
  // rather than failing at once.
  busy_wait_.install(db_);
  exec("PRAGMA journal_mode=WAL");
  // NORMAL in WAL mode survives a process kill; only power loss may drop the last commits.
  exec("PRAGMA synchronous=NORMAL");
  exec("PRAGMA foreign_keys=ON");
  exec("PRAGMA temp_store=MEMORY");
  if (!opts.auto_checkpoint) exec("PRAGMA wal_autocheckpoint=65536");
  // After the WAL restarts, its file is cut back to 64 MiB (a burst may have grown it).
  exec("PRAGMA journal_size_limit=67108864");
  exec(("PRAGMA cache_size=-" + std::to_string(opts.cache_kib)).c_str());
}

sqlite_database::~sqlite_database() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

void sqlite_database::exec(const char* sql) {
  char* error = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    std::string message = error ? error : sqlite3_errstr(rc);
    sqlite3_free(error);
    throw core::store_error(std::string("exec: ") + message);
  }
}

statement sqlite_database::prepare(const char* sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) throw_sqlite_error(db_, rc, "prepare");
    it = cache_.emplace(sql, stmt).first;
  }
  return statement(db_, it->second, false);
}

statement sqlite_database::prepare_uncached(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
  if (rc != SQLITE_OK) throw_sqlite_error(db_, rc, "prepare");
  return statement(db_, stmt, true);
}

}  // namespace agw::persistence
