#pragma once
// Helpers shared by the persistence suites: a throw-away database file (the rows
// are in tests/support/store_rows.hpp, shared with the port conformance suites).
#include <filesystem>
#include <memory>
#include <string>

#include "core/events/log_codec.hpp"
#include "core/events/sse_format.hpp"
#include "core/ids.hpp"
#include "persistence/journal_file.hpp"
#include "persistence/migrations.hpp"
#include "persistence/sqlite_store.hpp"
#include "tests/support/store_rows.hpp"

namespace agw::test {

// A database file in the temp directory, removed (with its WAL files) afterwards.
struct temp_db {
  std::string path = (std::filesystem::temp_directory_path() / ("agw-unit-" + core::new_uuid() + ".db")).string();

  temp_db() = default;
  temp_db(const temp_db&) = delete;
  temp_db& operator=(const temp_db&) = delete;
  ~temp_db() {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
    std::filesystem::remove_all(journal_dir(), ec);
  }

  // Where the event journal's files of this database go (persistence/journal_file.hpp).
  std::filesystem::path journal_dir() const { return persistence::journal_dir_for(path); }

  // A connection to the migrated database.
  std::unique_ptr<persistence::sqlite_store> open() const {
    auto store = std::make_unique<persistence::sqlite_store>(path);
    persistence::migrate(store->database());
    return store;
  }
};

// SELECT COUNT(*) FROM <table> WHERE session_id = ?
inline std::int64_t count_rows(persistence::sqlite_store& store, const std::string& table, const std::string& session_id) {
  auto st = store.database().prepare_uncached("SELECT COUNT(*) FROM " + table + " WHERE session_id = ?");
  st.bind(1, session_id);
  st.step();
  return st.int64(0);
}

inline std::string pragma_text(persistence::sqlite_store& store, const std::string& pragma) {
  auto st = store.database().prepare_uncached("PRAGMA " + pragma);
  st.step();
  return st.text(0);
}

// What migration 8 added (webhook claims), taken away again: undone first wherever a
// test goes back to an older version (ALTER TABLE ADD COLUMN is not idempotent either).
inline constexpr const char* undo_migration_8 =
    "ALTER TABLE webhook_deliveries DROP COLUMN claimed_until; ALTER TABLE session_notices DROP COLUMN claimed_until;";

// What migration 6 added, taken away again: tests rebuild an older version from the
// current schema (migration 6 is not idempotent: ALTER TABLE ADD COLUMN).
inline constexpr const char* undo_migration_6 =
    "DROP INDEX sessions_active; DROP INDEX sessions_event_webhooks; DROP TABLE session_label_index; "
    "DROP TABLE session_state; DROP TABLE session_notices; DROP TRIGGER messages_touch_session; DROP TRIGGER "
    "sessions_drop_state; "
    "ALTER TABLE sessions DROP COLUMN labels; ALTER TABLE sessions DROP COLUMN variables; "
    "ALTER TABLE sessions DROP COLUMN ttl_seconds; ALTER TABLE sessions DROP COLUMN active_at; "
    "ALTER TABLE sessions DROP COLUMN event_webhook_url; ALTER TABLE sessions DROP COLUMN event_webhook_cursor; "
    "ALTER TABLE webhook_deliveries DROP COLUMN event_first_id;";

}  // namespace agw::test
