#include "persistence/migrations.hpp"

#include <doctest/doctest.h>

#include <set>

#include "persistence/journal_codec.hpp"
#include "tests/persistence/sqlite_fixture.hpp"

namespace {

using agw::persistence::migrate;
using agw::persistence::schema_version;
using agw::persistence::sqlite_store;
using agw::test::make_session;
using agw::test::pragma_text;
using agw::test::temp_db;
using agw::test::undo_migration_6;
using agw::test::undo_migration_8;

// What migration 5 added, taken away again: a file from before it.
constexpr const char* undo_migration_5 =
    "ALTER TABLE messages DROP COLUMN source; ALTER TABLE sessions DROP COLUMN mode; DROP TABLE queued_messages;";

std::set<std::string> table_names(sqlite_store& store) {
  std::set<std::string> out;
  auto st = store.database().prepare_uncached("SELECT name FROM sqlite_master WHERE type = 'table'");
  while (st.step()) out.insert(st.text(0));
  return out;
}

}  // namespace

TEST_CASE("migrations: a new file gets the whole schema") {
  temp_db db;
  auto store = db.open();
  CHECK(schema_version() == 8);
  CHECK(pragma_text(*store, "user_version") == std::to_string(schema_version()));
  CHECK(table_names(*store) == std::set<std::string>{"checkpoints", "event_batches", "event_journal", "idempotency_keys",
                                                     "message_counts", "messages", "queued_messages", "session_label_index",
                                                     "session_labels", "session_notices", "session_state", "sessions",
                                                     "sqlite_sequence", "webhook_attempts", "webhook_deliveries"});
  CHECK(pragma_text(*store, "journal_mode") == "wal");
  CHECK(pragma_text(*store, "foreign_keys") == "1");
}

TEST_CASE("migrations: re-opening and re-migrating is a no-op that keeps the data") {
  temp_db db;
  {
    auto store = db.open();
    store->insert_session(make_session("s1", 10));
    migrate(store->database());  // twice on one connection
    CHECK(pragma_text(*store, "user_version") == std::to_string(schema_version()));
  }
  auto again = db.open();
  CHECK(pragma_text(*again, "user_version") == std::to_string(schema_version()));
  CHECK(again->find_session("s1").has_value());
  CHECK(again->all_session_ids() == std::vector<std::string>{"s1"});
}

TEST_CASE("migrations: a database newer than the binary is refused") {
  temp_db db;
  {
    auto store = db.open();
    store->database().exec("PRAGMA user_version = 99");
  }
  sqlite_store store(db.path);
  try {
    migrate(store.database());
    FAIL("migrated a newer database");
  } catch (const agw::core::store_error& e) {
    CHECK(std::string(e.what()).find("newer") != std::string::npos);
  }
  CHECK(pragma_text(store, "user_version") == "99");
}

TEST_CASE("migrations: an unopenable path is a store_error") {
  CHECK_THROWS_AS(sqlite_store("/nonexistent-dir-for-agw-tests/x/y.db"), agw::core::store_error);
}

TEST_CASE("migrations: a version 1 file gains the event journal and keeps its data") {
  temp_db db;
  {
    auto store = db.open();
    store->insert_session(make_session("s1", 10));
    store->append_events(agw::test::make_batch("s1", 1, 3));
    // Back to what a version 1 binary left behind.
    store->database().exec(undo_migration_8);
    store->database().exec(undo_migration_6);
    store->database().exec(undo_migration_5);
    store->database().exec("DROP TABLE event_journal; DROP TRIGGER sessions_drop_checkpoints");
    store->database().exec("PRAGMA user_version = 1");
  }
  auto again = db.open();
  CHECK(pragma_text(*again, "user_version") == std::to_string(schema_version()));
  CHECK(table_names(*again).contains("event_journal"));
  REQUIRE(again->find_session("s1"));
  CHECK(again->find_session("s1")->last_event_id == 3);
  CHECK(again->events_after("s1", 0, 10).size() == 3);
}

TEST_CASE("migrations: a version 2 file gets its sessions' message counts, which triggers then keep exact") {
  temp_db db;
  {
    auto store = db.open();
    store->insert_session(make_session("s1", 10));
    store->insert_session(make_session("s2", 20));
    for (std::int64_t seq = 1; seq <= 3; ++seq)
      store->upsert_message(agw::test::make_message("s1", "m" + std::to_string(seq), seq));
    // Back to what a version 2 binary left behind: no counts table, no triggers.
    store->database().exec(undo_migration_8);
    store->database().exec(undo_migration_6);
    store->database().exec(
        "DROP TRIGGER messages_counted_in; DROP TRIGGER messages_counted_out; DROP TABLE message_counts; "
        "DROP TRIGGER sessions_drop_checkpoints; "
        "PRAGMA user_version = 2");
    store->database().exec(undo_migration_5);
  }
  auto again = db.open();
  CHECK(again->find_session("s1")->message_count == 3);
  CHECK(again->find_session("s2")->message_count == 0);
  again->upsert_message(agw::test::make_message("s1", "m4", 4));
  again->upsert_message(agw::test::make_message("s1", "m2", 2));  // a replace counts nothing
  CHECK(again->find_session("s1")->message_count == 4);
  again->delete_messages("s1");
  CHECK(again->find_session("s1")->message_count == 0);
}

TEST_CASE("migrations: a version 3 file loses the checkpoints' session index, keeps its rows and still cascades") {
  temp_db db;
  {
    auto store = db.open();
    store->insert_session(make_session("s1", 10));
    store->insert_session(make_session("s2", 20));
    store->insert_checkpoint({"thread-s1", "s1", 1, R"({"messages":[]})", 10});
    store->insert_checkpoint({"thread-s2", "s2", 1, R"({"messages":[]})", 20});
    // Back to what a version 3 binary left behind: the index, no triggers.
    store->database().exec(undo_migration_8);
    store->database().exec(undo_migration_6);
    store->database().exec(
        "CREATE INDEX checkpoints_session ON checkpoints (session_id); DROP TRIGGER sessions_drop_checkpoints; "
        "DROP TRIGGER checkpoints_need_session; PRAGMA user_version = 3");
    store->database().exec(undo_migration_5);
  }
  auto again = db.open();
  auto indexes = again->database().prepare_uncached(
      "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'checkpoints' AND name NOT LIKE 'sqlite_%'");
  indexes.step();
  CHECK(indexes.int64(0) == 0);
  REQUIRE(again->latest_checkpoint("thread-s1"));
  REQUIRE(again->latest_checkpoint("thread-s2"));
  CHECK(again->delete_session("s1"));
  CHECK_FALSE(again->latest_checkpoint("thread-s1"));
  CHECK(again->latest_checkpoint("thread-s2"));
  // A row for a session that is gone is refused, as the foreign key refused it.
  CHECK_THROWS_WITH_AS(again->insert_checkpoint({"thread-s1", "s1", 2, "{}", 30}), doctest::Contains("FOREIGN KEY"),
                       agw::core::store_error);
}

TEST_CASE("migrations: a version 4 file gains the session attributes; activity from its newest message") {
  temp_db db;
  {
    auto store = db.open();
    store->insert_session(make_session("s1", 10));
    store->insert_session(make_session("s2", 20));
    auto m = agw::test::make_message("s1", "m1", 1);
    m.created_at_ms = 500;
    store->upsert_message(m);
    store->database().exec(undo_migration_8);
    store->database().exec(undo_migration_6);
    store->database().exec(undo_migration_5);
    store->database().exec("PRAGMA user_version = 4");
  }
  auto again = db.open();
  CHECK(pragma_text(*again, "user_version") == std::to_string(schema_version()));
  CHECK(again->find_session("s1")->active_at_ms == 500);
  CHECK(again->find_session("s2")->active_at_ms == 20);
  CHECK(again->find_session("s1")->labels.empty());
  CHECK(again->find_session("s1")->variables.empty());
  CHECK_FALSE(again->find_session("s1")->ttl_seconds);
}

TEST_CASE("migrations: the journal loses AUTOINCREMENT and keeps its rows and its seqs' high-water mark") {
  temp_db db;
  std::int64_t newest = 0;
  {
    auto store = db.open();
    store->insert_session(make_session("s1", 10));
    // Back to the journal the version before this migration had: AUTOINCREMENT, two rows
    // left, and a high-water mark above them (rows already cut).
    store->database().exec(
        "DROP TABLE event_journal; CREATE TABLE event_journal (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "entries BLOB NOT NULL, created_at INTEGER NOT NULL)");
    for (const auto& b : {agw::test::make_batch("s1", 1, 2), agw::test::make_batch("s1", 3, 3)}) {
      const agw::persistence::journal_entry entry{b, ""};  // that version's rows had no thread id
      const agw::persistence::journal_entry* rows[] = {&entry};
      store->database()
          .prepare_uncached("INSERT INTO event_journal (entries, created_at) VALUES (?, 1)")
          .bind_blob(1, agw::persistence::encode_journal_entries(rows))
          .run();
    }
    store->database().exec("UPDATE sqlite_sequence SET seq = 40 WHERE name = 'event_journal'");
    store->database().exec(agw::test::undo_migration_8);
    store->database().exec(("PRAGMA user_version = " + std::to_string(schema_version() - 2)).c_str());
    newest = 40;
  }
  auto again = db.open();
  CHECK(pragma_text(*again, "user_version") == std::to_string(schema_version()));
  auto sql = again->database().prepare_uncached("SELECT sql FROM sqlite_master WHERE name = 'event_journal'");
  REQUIRE(sql.step());
  CHECK(sql.text(0).find("AUTOINCREMENT") == std::string::npos);
  auto sequence = again->database().prepare_uncached("SELECT count(*) FROM sqlite_sequence WHERE name = 'event_journal'");
  sequence.step();
  CHECK(sequence.int64(0) == 0);
  // The old high-water mark stays as the newest row.
  auto high = again->database().prepare_uncached("SELECT max(seq) FROM event_journal");
  high.step();
  CHECK(high.int64(0) >= newest);
  // The journaled events are still there for the fold (the table is no longer written:
  // journal files took its place, and the start-up fold empties it).
  CHECK(again->fold_journal(db.journal_dir()) == 2);
  const auto events = again->events_after("s1", 0, 10);
  REQUIRE(events.size() == 3);
  CHECK(events.front()->id == 1);
  CHECK(events.back()->id == 3);
}
