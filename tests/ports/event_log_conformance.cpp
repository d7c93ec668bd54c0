// event_log: a session's durable events as replays, the long poll and retention
// see them. The frames read back must be the exact SSE bytes that were written.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/ports/store_impls.hpp"

using namespace agw::test;

namespace {

// A session with the rows [1..3] [4..4] [5..9] [10..12], appended out of order, and
// a neighbour with [1..50] whose ids overlap.
template <class connection>
void seed_rows(connection& store) {
  store.insert_session(make_session("s", 1));
  store.insert_session(make_session("other", 2));
  for (auto [first, last] : {std::pair{1, 3}, std::pair{5, 9}, std::pair{4, 4}, std::pair{10, 12}})
    store.append_events(make_batch("s", first, last));
  store.append_events(make_batch("other", 1, 50));
}

void check_exact_bytes(const std::vector<agw::core::frame_ptr>& events) {
  for (const auto& e : events) {
    CAPTURE(e->id);
    CHECK(e->sse == frame_text(e->id));
  }
}

}  // namespace

TEST_CASE_TEMPLATE("event_log: events_after crosses rows in id order, at most limit", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  seed_rows(*store);
  struct row {
    std::int64_t after;
    std::size_t limit;
    std::vector<std::int64_t> expected;
  };
  const row rows[] = {
      {0, 100, id_range(1, 12)},
      {0, 12, id_range(1, 12)},
      {0, 5, id_range(1, 5)},
      {2, 4, id_range(3, 6)},
      {3, 1, {4}},
      {4, 3, id_range(5, 7)},
      {6, 100, id_range(7, 12)},
      {9, 100, id_range(10, 12)},
      {11, 100, {12}},
      {12, 100, {}},
      {100, 5, {}},
      {5, 0, {}},
      {-5, 2, {1, 2}},
      {8, 2, {9, 10}},
      {3, 2, {4, 5}},
      {0, 1, {1}},
  };
  for (const auto& r : rows) {
    CAPTURE(r.after);
    CAPTURE(r.limit);
    const auto events = store->events_after("s", r.after, r.limit);
    CHECK(ids_of(events) == r.expected);
    check_exact_bytes(events);
  }
  CHECK(store->events_after("none", 0, 100).empty());
  CHECK(ids_of(store->events_after("other", 45, 100)) == id_range(46, 50));
  check_exact_bytes(store->events_after("other", 0, 100));
}

TEST_CASE_TEMPLATE("event_log: the frames read back are the exact SSE bytes written", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  // Frames of different shapes in one row: multi-line data, unicode, an empty payload.
  std::vector<agw::core::frame_ptr> frames = {
      std::make_shared<const agw::core::event_frame>(
          agw::core::make_event_frame(1, agw::core::event_type::status, "run-7", boost::json::object{{"input", "a\r\nb"}})),
      std::make_shared<const agw::core::event_frame>(agw::core::make_event_frame(
          2, agw::core::event_type::token, "run-7", boost::json::object{{"content", "\xC3\xA9\xE2\x9C\x93 \"q\""}})),
      std::make_shared<const agw::core::event_frame>(
          agw::core::make_event_frame(3, agw::core::event_type::token, "run-7", boost::json::object{})),
  };
  store->append_events({"s", 1, 3, agw::core::encode_log_frames(frames), 77});
  const auto events = store->events_after("s", 0, 10);
  REQUIRE(events.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(events[i]->id == frames[i]->id);
    CHECK(events[i]->sse == frames[i]->sse);
  }
}

TEST_CASE_TEMPLATE("event_log: a retried append from the same first id changes nothing or extends", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->append_events(make_batch("s", 1, 3));
  store->append_events(make_batch("s", 4, 10));
  struct row {
    const char* name;
    std::int64_t first, last;
    std::vector<std::int64_t> held;
    std::int64_t last_event_id;
  };
  const row rows[] = {
      {"the same attempt again", 4, 10, id_range(1, 10), 10}, {"a shorter retry", 4, 5, id_range(1, 10), 10},
      {"a longer retry", 4, 12, id_range(1, 12), 12},         {"a retry of the first row, shorter", 1, 1, id_range(1, 12), 12},
      {"the next batch", 13, 13, id_range(1, 13), 13},
  };
  for (const auto& r : rows) {
    CAPTURE(r.name);
    store->append_events(make_batch("s", r.first, r.last));
    const auto events = store->events_after("s", 0, 100);
    CHECK(ids_of(events) == r.held);
    check_exact_bytes(events);
    CHECK(store->find_session("s")->last_event_id == r.last_event_id);
    CHECK(store->oldest_event_id("s") == 1);
  }
}

TEST_CASE_TEMPLATE("event_log: last_event_id follows appends, never goes back, survives trimming everything", impl,
                   AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  CHECK(store->find_session("s")->last_event_id == 0);
  store->append_events(make_batch("s", 1, 3));
  CHECK(store->find_session("s")->last_event_id == 3);
  store->append_events(make_batch("s", 4, 10));
  CHECK(store->find_session("s")->last_event_id == 10);
  store->trim_events("s", 11);  // retention took every event
  CHECK(store->events_after("s", 0, 100).empty());
  CHECK(store->oldest_event_id("s") == 0);
  CHECK(store->find_session("s")->last_event_id == 10);  // the sequence stays where it was
  CHECK(store->list_sessions({}).sessions.at(0).last_event_id == 10);
  store->append_events(make_batch("s", 11, 11));
  CHECK(store->find_session("s")->last_event_id == 11);
  CHECK(ids_of(store->events_after("s", 0, 100)) == std::vector<std::int64_t>{11});
}

// Retention is exact: the row the cut goes through keeps only its frames from the cut
// on, so a resume older than the cut sees the gap at once.
TEST_CASE_TEMPLATE("event_log: trim_events keeps exactly the events from the cut on, at every cut point", impl, AGW_STORE_IMPLS) {
  struct row {
    std::int64_t keep_from;
    std::int64_t oldest;  // 0: none held
  };
  const row rows[] = {{-3, 1}, {0, 1}, {1, 1},   {2, 2},   {3, 3},   {4, 4},  {5, 5},  {6, 6},
                      {7, 7},  {9, 9}, {10, 10}, {11, 11}, {12, 12}, {13, 0}, {100, 0}};
  for (const auto& r : rows) {
    CAPTURE(r.keep_from);
    impl store_impl;
    auto store = store_impl.open();
    seed_rows(*store);
    store->trim_events("s", r.keep_from);
    const auto held = r.oldest ? id_range(r.oldest, 12) : std::vector<std::int64_t>{};
    CHECK(store->oldest_event_id("s") == r.oldest);
    const auto events = store->events_after("s", 0, 100);
    CHECK(ids_of(events) == held);
    check_exact_bytes(events);
    // Reads from every cursor seek correctly, inside the trimmed row too.
    for (std::int64_t after = 0; after <= 12; ++after) {
      CAPTURE(after);
      std::vector<std::int64_t> expected;
      for (auto id : held)
        if (id > after && expected.size() < 2) expected.push_back(id);
      CHECK(ids_of(store->events_after("s", after, 2)) == expected);
    }
    CHECK(store->find_session("s")->last_event_id == 12);  // trimming does not move the sequence
    CHECK(store->oldest_event_id("other") == 1);           // per session
    CHECK(ids_of(store->events_after("other", 0, 100)) == id_range(1, 50));
    // Appending after a trim goes on from the sequence.
    store->append_events(make_batch("s", 13, 14));
    CHECK(ids_of(store->events_after("s", 12, 100)) == id_range(13, 14));
    CHECK(store->oldest_event_id("s") == (r.oldest ? r.oldest : 13));
  }
}

TEST_CASE_TEMPLATE("event_log: trimming twice, and trimming a session without events, are harmless", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  seed_rows(*store);
  store->trim_events("s", 6);
  store->trim_events("s", 6);  // the same cut again
  store->trim_events("s", 2);  // an older cut: nothing comes back
  CHECK(store->oldest_event_id("s") == 6);
  CHECK(ids_of(store->events_after("s", 0, 100)) == id_range(6, 12));
  store->trim_events("s", 8);  // a later cut inside the already trimmed row
  CHECK(store->oldest_event_id("s") == 8);
  check_exact_bytes(store->events_after("s", 0, 100));
  CHECK_NOTHROW(store->trim_events("none", 5));
  store->insert_session(make_session("empty", 3));
  CHECK_NOTHROW(store->trim_events("empty", 5));
  CHECK(store->oldest_event_id("empty") == 0);
  CHECK(store->find_session("empty")->last_event_id == 0);
}

TEST_CASE_TEMPLATE("event_log: events of an unknown session are refused", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  CHECK(throws_store_error([&] { store->append_events(make_batch("nope", 1, 2)); }));
  CHECK(store->events_after("nope", 0, 100).empty());
  CHECK(store->oldest_event_id("nope") == 0);
  // Nor does the refused row turn up once a session of that id exists.
  store->insert_session(make_session("nope", 1));
  CHECK(store->events_after("nope", 0, 100).empty());
  CHECK(store->find_session("nope")->last_event_id == 0);
}
