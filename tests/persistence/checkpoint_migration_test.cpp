// Migration 3: a version 2 database (every checkpoint row a whole conversation) is
// converted to snapshots and deltas, and what it held restores exactly.
#include <doctest/doctest.h>

#include "core/checkpoint_delta.hpp"
#include "core/projection.hpp"
#include "persistence/migrations.hpp"
#include "tests/persistence/sqlite_fixture.hpp"

namespace {

using agw::core::conversation_state;
using agw::test::make_message;
using agw::test::make_session;
using agw::test::pragma_text;
using agw::test::temp_db;

// The checkpoints table as a version 2 binary left it.
constexpr const char* version_2_checkpoints = R"sql(
DROP TRIGGER sessions_drop_checkpoints;
DROP TABLE checkpoints;
CREATE TABLE checkpoints (
  seq        INTEGER PRIMARY KEY,
  thread_id  TEXT NOT NULL,
  version    INTEGER NOT NULL,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  state      TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (thread_id, version)
);
CREATE INDEX checkpoints_session ON checkpoints (session_id);
PRAGMA user_version = 2;
)sql";

void insert_old_row(agw::persistence::sqlite_store& store, const std::string& session, std::int64_t version,
                    const std::string& state) {
  store.database()
      .prepare_uncached("INSERT INTO checkpoints (thread_id, version, session_id, state, created_at) VALUES (?, ?, ?, ?, ?)")
      .bind(1, "thread-" + session)
      .bind(2, version)
      .bind(3, session)
      .bind(4, state)
      .bind(5, version * 100)
      .run();
}

// Versions 1..3 of one conversation, each whole, as the old run paths wrote them.
std::vector<conversation_state> old_versions() {
  conversation_state state;
  std::vector<conversation_state> out;
  state.messages.push_back(make_message("s1", "u1", 1));
  state.run = agw::core::checkpoint_run{"run-1", "running", "u1", 10, std::nullopt, 0, std::nullopt};
  out.push_back(state);
  auto answer = make_message("s1", "a1", 2);
  answer.token_count = 4;
  answer.model_used = "mock";
  answer.parent_id = "u1";
  state.messages.push_back(answer);
  state.run->state = "completed";
  state.run->ended_at_ms = 20;
  out.push_back(state);
  state.messages.push_back(make_message("s1", "u2", 3));
  state.run = agw::core::checkpoint_run{"run-2", "running", "u2", 30, std::nullopt, 5, "https://hooks.example/x"};
  out.push_back(state);
  return out;
}

std::int64_t column(agw::persistence::sqlite_store& store, const std::string& sql) {
  auto st = store.database().prepare_uncached(sql);
  REQUIRE(st.step());
  return st.int64(0);
}

}  // namespace

TEST_CASE("checkpoint migration: version 2 whole-state rows become snapshots that restore exactly") {
  temp_db db;
  const auto versions = old_versions();
  {
    auto store = db.open();
    store->insert_session(make_session("s1", 10));
    store->insert_session(make_session("s2", 20));
    store->database().exec(agw::test::undo_migration_8);
    store->database().exec(agw::test::undo_migration_6);
    store->database().exec(version_2_checkpoints);
    for (std::size_t i = 0; i < versions.size(); ++i)
      insert_old_row(*store, "s1", static_cast<std::int64_t>(i + 1), agw::core::serialize_checkpoint(versions[i]));
    for (const auto& m : versions.back().messages) store->upsert_message(m);
    insert_old_row(*store, "s2", 1, agw::core::serialize_checkpoint(versions.front()));
    insert_old_row(*store, "s2", 2, "not json");  // unreadable: kept as it was, as before
    // Nor had a version 2 file what migration 5 adds.
    store->database().exec(
        "ALTER TABLE messages DROP COLUMN source; ALTER TABLE sessions DROP COLUMN mode; DROP TABLE queued_messages;");
  }
  auto store = db.open();
  CHECK(pragma_text(*store, "user_version") == std::to_string(agw::persistence::schema_version()));

  // Only the newest row of each thread is kept, as a snapshot of known size and count.
  const auto fp = store->checkpoint_footprint_of("thread-s1");
  CHECK(fp.rows == 1);
  CHECK(fp.newest_version == 3);
  CHECK(fp.snapshot_version == 3);
  CHECK(fp.snapshot_bytes == static_cast<std::int64_t>(agw::core::serialize_checkpoint(versions.back()).size()));
  CHECK(column(*store, "SELECT message_count FROM checkpoints WHERE thread_id = 'thread-s1'") == 3);
  CHECK(column(*store, "SELECT message_count FROM checkpoints WHERE thread_id = 'thread-s2'") == -1);
  CHECK(column(*store, "SELECT count(*) FROM checkpoints WHERE kind <> 'snapshot'") == 0);

  const auto latest = store->latest_conversation("thread-s1");
  REQUIRE(latest);
  CHECK(latest->version == 3);
  CHECK(latest->created_at_ms == 300);
  CHECK(agw::core::serialize_checkpoint(latest->state) == agw::core::serialize_checkpoint(versions.back()));
  CHECK(store->latest_checkpoint("thread-s1")->state == agw::core::serialize_checkpoint(versions.back()));
  CHECK(store->latest_checkpoint("thread-s2")->state == "not json");
  CHECK(store->latest_checkpoint("thread-s2")->version == 2);
  CHECK_THROWS(store->latest_conversation("thread-s2"));

  // The projection agrees (ids, timestamps, usage), and the conversation goes on in deltas.
  auto s1 = *store->find_session("s1");
  CHECK_FALSE(agw::core::projection_drifted(*store, s1));
  auto next = versions.back();
  auto answer = make_message("s1", "a2", 4);
  answer.token_count = 9;
  next.messages.push_back(answer);
  next.run->state = "completed";
  agw::core::checkpoint_delta d = agw::core::make_checkpoint_delta(s1, 4, next, 2);
  d.message_count = 5;  // a position left empty is refused against the migrated count
  CHECK_THROWS(store->append_checkpoint(d));
  store->append_checkpoint(agw::core::make_checkpoint_delta(s1, 4, next, 2));
  CHECK(agw::core::serialize_checkpoint(store->latest_conversation("thread-s1")->state) == agw::core::serialize_checkpoint(next));
  CHECK(agw::core::rebuild_projection(*store, "s1") == 4);
  const auto rows = store->all_messages("s1");
  REQUIRE(rows.size() == 4);
  CHECK(rows[1].id == "a1");
  CHECK(rows[1].token_count == 4);
  CHECK(rows[1].created_at_ms == versions.back().messages[1].created_at_ms);
  CHECK(rows[3].token_count == 9);
}
