#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/events/sse_format.hpp"
#include "persistence/journal_codec.hpp"
#include "persistence/journal_file.hpp"
#include "persistence/sqlite_store.hpp"
#include "tests/persistence/sqlite_fixture.hpp"

// Prints id lists in failure messages.
template <>
struct doctest::StringMaker<std::vector<std::int64_t>> {
  static doctest::String convert(const std::vector<std::int64_t>& ids) {
    std::string out = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
    return (out + "]").c_str();
  }
};

namespace {

using agw::core::frame_ptr;
using agw::test::frame_text;
using agw::test::make_batch;
using agw::test::make_session;
using agw::test::temp_db;

std::vector<std::int64_t> range(std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = first; i <= last; ++i) out.push_back(i);
  return out;
}

std::vector<std::int64_t> ids_of(const std::vector<frame_ptr>& events) {
  std::vector<std::int64_t> out;
  for (const auto& e : events) out.push_back(e->id);
  return out;
}

// A session with the batches [1..3] [4..4] [5..9] [10..12].
std::unique_ptr<agw::persistence::sqlite_store> seeded(const temp_db& db) {
  auto store = db.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("other", 2));
  for (auto [first, last] : {std::pair{1, 3}, std::pair{4, 4}, std::pair{5, 9}, std::pair{10, 12}})
    store->append_events(make_batch("s", first, last));
  store->append_events(make_batch("other", 1, 50));
  return store;
}

// Journal records as sqlite_event_writer writes them: one per append,
// each entry with its session's incarnation (make_session's thread id unless given).
struct journal_writer {
  explicit journal_writer(const temp_db& db) : file(db.journal_dir(), {}) {}
  void append(const std::vector<agw::core::event_batch_record>& batches, const std::string& thread_id = {}) {
    std::vector<agw::persistence::journal_entry> entries;
    for (const auto& b : batches) entries.push_back({b, thread_id.empty() ? "thread-" + b.session_id : thread_id});
    std::vector<const agw::persistence::journal_entry*> rows;
    for (const auto& e : entries) rows.push_back(&e);
    file.append(agw::persistence::encode_journal_entries(rows));
  }
  agw::persistence::journal_file file;
};

}  // namespace

TEST_CASE("sqlite_store_events: events_after across batch boundaries with a limit") {
  temp_db db;
  auto store = seeded(db);
  struct row {
    std::int64_t after;
    std::size_t limit;
    std::vector<std::int64_t> expected;
  };
  const row rows[] = {
      {0, 100, range(1, 12)},
      {0, 12, range(1, 12)},
      {0, 5, range(1, 5)},
      {2, 4, range(3, 6)},
      {3, 1, {4}},
      {4, 3, range(5, 7)},
      {6, 100, range(7, 12)},
      {9, 100, range(10, 12)},
      {11, 100, {12}},
      {12, 100, {}},
      {100, 5, {}},
      {5, 0, {}},
      {-5, 2, {1, 2}},
      {8, 2, {9, 10}},
  };
  for (const auto& r : rows) {
    CAPTURE(r.after);
    CAPTURE(r.limit);
    const auto events = store->events_after("s", r.after, r.limit);
    CHECK(ids_of(events) == r.expected);
    for (const auto& e : events) {
      CAPTURE(e->id);
      CHECK(e->sse == frame_text(e->id));
    }
  }
  CHECK(store->events_after("none", 0, 100).empty());
  CHECK(store->oldest_event_id("s") == 1);
  CHECK(store->oldest_event_id("none") == 0);
  CHECK(ids_of(store->events_after("other", 45, 100)) == range(46, 50));
}

TEST_CASE("sqlite_store_events: a session's last_event_id is its newest segment's last id") {
  temp_db db;
  auto store = db.open();
  store->insert_session(make_session("s", 1));
  CHECK(store->find_session("s")->last_event_id == 0);
  store->append_events(make_batch("s", 1, 3));
  CHECK(store->find_session("s")->last_event_id == 3);
  store->append_events(make_batch("s", 4, 10));
  CHECK(store->find_session("s")->last_event_id == 10);
  // Never backwards.
  auto stale = make_batch("s", 0, 0);
  store->append_events(stale);
  CHECK(store->find_session("s")->last_event_id == 10);
  // A segment starting at a stored first id is a retry of the same frames: one that does
  // not reach further changes nothing, one that does replaces the stored one.
  store->append_events(make_batch("s", 4, 5));
  CHECK(store->find_session("s")->last_event_id == 10);
  CHECK(ids_of(store->events_after("s", 3, 100)) == range(4, 10));
  store->append_events(make_batch("s", 4, 12));
  CHECK(store->find_session("s")->last_event_id == 12);
  CHECK(ids_of(store->events_after("s", 3, 100)) == range(4, 12));
  for (const auto& e : store->events_after("s", 0, 100)) CHECK(e->sse == frame_text(e->id));
}

// Retention is exact: the batch the cut goes through keeps only its frames from the cut on,
// so a resume older than the cut sees the gap at once (not after later segments).
TEST_CASE("sqlite_store_events: trim_events keeps exactly the events from the cut on") {
  struct row {
    std::int64_t keep_from;
    std::int64_t oldest;  // 0: none held
    std::vector<std::int64_t> held;
  };
  const row rows[] = {
      {0, 1, range(1, 12)}, {1, 1, range(1, 12)}, {3, 3, range(3, 12)},    {4, 4, range(4, 12)},    {5, 5, range(5, 12)},
      {7, 7, range(7, 12)}, {9, 9, range(9, 12)}, {10, 10, range(10, 12)}, {12, 12, range(12, 12)}, {13, 0, {}},
  };
  for (const auto& r : rows) {
    CAPTURE(r.keep_from);
    temp_db db;
    auto store = seeded(db);
    store->trim_events("s", r.keep_from);
    CHECK(store->oldest_event_id("s") == r.oldest);
    CHECK(ids_of(store->events_after("s", 0, 100)) == r.held);
    // Every id >= keep_from survives, with its exact frame.
    for (std::int64_t id = std::max<std::int64_t>(r.keep_from, 1); id <= 12; ++id)
      CHECK(std::find(r.held.begin(), r.held.end(), id) != r.held.end());
    for (const auto& e : store->events_after("s", 0, 100)) CHECK(e->sse == frame_text(e->id));
    CHECK(store->find_session("s")->last_event_id == 12);  // trimming does not move the sequence
    CHECK(store->oldest_event_id("other") == 1);
  }
}

TEST_CASE("sqlite_store_events: rows in the plain-text form of earlier versions still replay") {
  temp_db db;
  auto store = db.open();
  store->insert_session(make_session("s", 1));
  agw::core::event_batch_record legacy{"s", 1, 3, frame_text(1) + frame_text(2) + frame_text(3), 1};
  store->append_events(legacy);
  store->append_events(make_batch("s", 4, 6));
  const auto events = store->events_after("s", 1, 100);
  CHECK(ids_of(events) == range(2, 6));
  for (const auto& e : events) CHECK(e->sse == frame_text(e->id));
}

TEST_CASE("sqlite_store_events: fold_journal moves what only the journal holds into segments") {
  temp_db db;
  auto store = db.open();
  for (const char* id : {"a", "b", "gone"}) store->insert_session(make_session(id, 1));
  // a: segment 1..3 and the journal records it was made of (a stop between the segment's
  // commit and the journal file's release), then 4..4 and 5..7 journal-only; b: journal
  // only; gone: deleted before the fold, with a record that outlived its delete.
  store->append_events(make_batch("a", 1, 3));
  {
    journal_writer j(db);
    j.append({make_batch("a", 1, 3)});
    j.append({make_batch("b", 1, 2)});
    j.append({make_batch("a", 4, 4)});
    j.append({make_batch("gone", 1, 1)});
    j.append({make_batch("b", 3, 3)});
    j.append({make_batch("a", 5, 7)});
    store->delete_session("gone");
    j.append({make_batch("gone", 2, 2)});
  }
  CHECK(store->fold_journal(db.journal_dir()) == 7);
  CHECK(ids_of(store->events_after("a", 0, 100)) == range(1, 7));
  CHECK(ids_of(store->events_after("b", 0, 100)) == range(1, 3));
  CHECK(store->events_after("gone", 0, 100).empty());
  for (const char* id : {"a", "b"})
    for (const auto& e : store->events_after(id, 0, 100)) CHECK(e->sse == frame_text(e->id));
  CHECK(store->find_session("a")->last_event_id == 7);
  CHECK(store->find_session("b")->last_event_id == 3);
  // One new segment per session for what was journaled.
  CHECK(agw::test::count_rows(*store, "event_batches", "a") == 2);
  CHECK(agw::test::count_rows(*store, "event_batches", "b") == 1);
  // Folded again (a crash before the files were removed): nothing is written twice.
  CHECK(store->fold_journal(db.journal_dir()) == 7);
  CHECK(agw::test::count_rows(*store, "event_batches", "a") == 2);
  CHECK(ids_of(store->events_after("a", 0, 100)) == range(1, 7));
  // Once removed, a fold finds nothing.
  agw::persistence::journal_file::remove_all(db.journal_dir());
  CHECK(store->fold_journal(db.journal_dir()) == 0);
}

TEST_CASE("sqlite_store_events: the fold keeps each event once when retried batches overlap") {
  temp_db db;
  auto store = db.open();
  store->insert_session(make_session("s", 1));
  store->append_events(make_batch("s", 1, 2));
  {
    // A batch whose write was reported failed though it was stored, retried longer; and
    // the same batch twice.
    journal_writer j(db);
    j.append({make_batch("s", 3, 5)});
    j.append({make_batch("s", 3, 7)});
    j.append({make_batch("s", 8, 8)});
    j.append({make_batch("s", 8, 8)});
    j.append({make_batch("s", 2, 4)});  // partly in the segment already
  }
  CHECK(store->fold_journal(db.journal_dir()) == 5);
  const auto events = store->events_after("s", 0, 100);
  CHECK(ids_of(events) == range(1, 8));
  for (const auto& e : events) CHECK(e->sse == frame_text(e->id));
  CHECK(store->find_session("s")->last_event_id == 8);
}

TEST_CASE("sqlite_store_events: one journal record holds several sessions' batches; the fold splits them") {
  temp_db db;
  auto store = db.open();
  for (const char* id : {"s", "t", "gone"}) store->insert_session(make_session(id, 1));
  {
    journal_writer j(db);
    j.append({make_batch("s", 1, 2), make_batch("t", 1, 1), make_batch("gone", 1, 3)});
    j.append({make_batch("t", 2, 4), make_batch("s", 3, 3)});
  }
  // The deleted session's part stays in the shared record until its file goes; nobody reads it.
  CHECK(store->delete_session("gone"));
  CHECK(store->fold_journal(db.journal_dir()) == 2);
  CHECK(ids_of(store->events_after("s", 0, 100)) == range(1, 3));
  CHECK(ids_of(store->events_after("t", 0, 100)) == range(1, 4));
  for (const char* id : {"s", "t"})
    for (const auto& e : store->events_after(id, 0, 100)) CHECK(e->sse == frame_text(e->id));
  CHECK(store->events_after("gone", 0, 100).empty());
}

TEST_CASE("sqlite_store_events: the fold gives a session none of the journaled events of an earlier one with its id") {
  temp_db db;
  auto store = db.open();
  store->insert_session(make_session("s", 1));  // thread-s
  {
    journal_writer j(db);
    j.append({make_batch("s", 1, 5)});  // the first session's, journal-only when it was deleted
    store->delete_session("s");
    auto again = make_session("s", 2);
    again.thread_id = "thread-s-again";
    store->insert_session(again);  // made again with the id: another incarnation
    j.append({make_batch("s", 1, 2)}, "thread-s-again");
    j.append({make_batch("s", 6, 7)});  // the first session's, written late: still not this one's
  }
  CHECK(store->fold_journal(db.journal_dir()) == 3);
  CHECK(ids_of(store->events_after("s", 0, 100)) == range(1, 2));
  CHECK(store->find_session("s")->last_event_id == 2);
}

TEST_CASE("sqlite_store_events: rows of the event_journal table an older version wrote are folded before the files") {
  temp_db db;
  auto store = db.open();
  store->insert_session(make_session("s", 1));
  // The table held 1..3 (an older version's journal); the files, 4..4 written after.
  const agw::persistence::journal_entry legacy{make_batch("s", 1, 3), ""};  // no thread id then
  const agw::persistence::journal_entry* rows[] = {&legacy};
  store->database()
      .prepare_uncached("INSERT INTO event_journal (entries, created_at) VALUES (?, 1)")
      .bind_blob(1, agw::persistence::encode_journal_entries(rows))
      .run();
  journal_writer(db).append({make_batch("s", 4, 4)});
  CHECK(store->fold_journal(db.journal_dir()) == 2);
  CHECK(ids_of(store->events_after("s", 0, 100)) == range(1, 4));
  auto st = store->database().prepare_uncached("SELECT COUNT(*) FROM event_journal");
  st.step();
  CHECK(st.int64(0) == 0);
}
