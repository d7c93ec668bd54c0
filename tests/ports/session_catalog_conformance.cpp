// session_catalog: the sessions' rows, their labels (metadata, scopes) as filters,
// and delete_session taking everything the session owns in every other port.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/ports/store_impls.hpp"

using namespace agw::test;
using agw::core::session_filter;
using agw::core::string_map;

TEST_CASE_TEMPLATE("session_catalog: insert and find round-trip every field", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  auto s = make_session("s1", 1700000000000);
  s.title = "T \xC3\xA9";
  s.status = "inactive";
  s.agent_name = "helper";
  s.config = {{"provider", "mock"}, {"temperature", 0.5}, {"mock", {{"tokens", 3}}}};
  s.scopes = {{"tenant", "acme"}};
  s.metadata = {{"k", "v"}, {"empty", ""}};
  s.updated_at_ms = 1700000000500;
  s.last_event_id = 7;
  store->insert_session(s);
  store->insert_session(make_session("s2", 1));

  const auto found = store->find_session("s1");
  REQUIRE(found);
  CHECK(found->id == "s1");
  CHECK(found->thread_id == "thread-s1");
  CHECK(found->title == s.title);
  CHECK(found->status == "inactive");
  CHECK(found->agent_name == "helper");
  CHECK(found->config == s.config);
  CHECK(found->scopes == s.scopes);
  CHECK(found->metadata == s.metadata);
  CHECK(found->created_at_ms == 1700000000000);
  CHECK(found->updated_at_ms == 1700000000500);
  CHECK(found->last_event_id == 7);
  CHECK(found->message_count == 0);

  const auto plain = store->find_session("s2");
  REQUIRE(plain);
  CHECK_FALSE(plain->title);
  CHECK(plain->config.empty());
  CHECK(plain->scopes.empty());
  CHECK(plain->metadata.empty());
  CHECK(plain->status == "active");
  CHECK(plain->agent_name == "default");
}

TEST_CASE_TEMPLATE("session_catalog: unknown ids answer empty or false", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  CHECK(store->all_session_ids().empty());
  CHECK(store->list_sessions({}).total == 0);
  store->insert_session(make_session("s", 1));
  CHECK_FALSE(store->find_session("nope"));
  CHECK_FALSE(store->find_session(""));
  CHECK_FALSE(store->find_session("S"));  // ids are exact
  CHECK_FALSE(store->update_session(make_session("nope", 1)));
  CHECK_FALSE(store->find_session("nope"));  // an update never creates
  CHECK_FALSE(store->delete_session("nope"));
  CHECK(store->all_session_ids() == std::vector<std::string>{"s"});
}

TEST_CASE_TEMPLATE("session_catalog: refused inserts are store_errors and change nothing", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s1", 1));
  auto same_id = make_session("s1", 9);
  same_id.thread_id = "thread-other";
  auto same_thread = make_session("s2", 2);
  same_thread.thread_id = "thread-s1";
  auto bad_status = make_session("s3", 3);
  bad_status.status = "deleted";
  struct row {
    const char* name;
    agw::core::session_record session;
  };
  const row rows[] = {
      {"duplicate session id", same_id},
      {"duplicate thread id", same_thread},
      {"status outside active/inactive/error", bad_status},
  };
  for (const auto& r : rows) {
    CAPTURE(r.name);
    CHECK(throws_store_error([&] { store->insert_session(r.session); }));
  }
  CHECK(store->all_session_ids() == std::vector<std::string>{"s1"});
  CHECK(store->find_session("s1")->created_at_ms == 1);
  CHECK(store->find_session("s1")->thread_id == "thread-s1");
}

TEST_CASE_TEMPLATE("session_catalog: update_session changes the mutable fields, keeps the rest", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  auto s = make_session("s1", 1);
  s.metadata = {{"a", "1"}};
  s.scopes = {{"tenant", "t1"}};
  s.last_event_id = 4;
  store->insert_session(s);

  s.title = "new";
  s.status = "error";
  s.agent_name = "other-agent";
  s.config = {{"model", "m"}};
  s.metadata = {{"b", "2"}};
  s.scopes = {{"tenant", "t2"}};
  s.updated_at_ms = 99;
  // Not updatable: the identity, the creation time, and the event sequence (the
  // event log's, not the caller's to move).
  s.thread_id = "thread-moved";
  s.created_at_ms = 12345;
  s.last_event_id = 555;
  CHECK(store->update_session(s));
  const auto found = store->find_session("s1");
  REQUIRE(found);
  CHECK(found->title == "new");
  CHECK(found->status == "error");
  CHECK(found->agent_name == "other-agent");
  CHECK(found->config == boost::json::object{{"model", "m"}});
  CHECK(found->metadata == string_map{{"b", "2"}});
  CHECK(found->scopes == string_map{{"tenant", "t2"}});
  CHECK(found->updated_at_ms == 99);
  CHECK(found->thread_id == "thread-s1");
  CHECK(found->created_at_ms == 1);
  CHECK(found->last_event_id == 4);

  // A title can be cleared again.
  s.title.reset();
  CHECK(store->update_session(s));
  CHECK_FALSE(store->find_session("s1")->title);

  // The filter labels follow the update.
  struct row {
    const char* name;
    session_filter filter;
    std::int64_t total;
  };
  session_filter old_metadata, new_metadata, old_scope, new_scope;
  old_metadata.metadata = {{"a", "1"}};
  new_metadata.metadata = {{"b", "2"}};
  old_scope.scopes = {{"tenant", "t1"}};
  new_scope.scopes = {{"tenant", "t2"}};
  for (const auto& r : {row{"old metadata", old_metadata, 0}, row{"new metadata", new_metadata, 1},
                        row{"old scope", old_scope, 0}, row{"new scope", new_scope, 1}}) {
    CAPTURE(r.name);
    CHECK(store->list_sessions(r.filter).total == r.total);
  }
}

TEST_CASE_TEMPLATE("session_catalog: list_sessions filters by status, metadata.* and scopes.*", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  struct seed {
    const char* id;
    std::int64_t created;
    const char* status;
    string_map metadata;
    string_map scopes;
  };
  const seed seeds[] = {
      {"a", 1000, "active", {{"team", "red"}, {"env", "prod"}}, {{"tenant", "t1"}}},
      {"b", 2000, "inactive", {{"team", "red"}}, {{"tenant", "t2"}}},
      {"c", 3000, "active", {{"team", "blue"}, {"env", "prod"}}, {{"tenant", "t1"}}},
      {"d", 4000, "error", {}, {}},
      {"e", 5000, "active", {{"team", "red"}, {"env", "dev"}}, {{"tenant", "t1"}, {"team", "red"}}},
      {"f", 5000, "active", {{"team", "red"}}, {}},  // same instant as e, inserted later: listed first
  };
  for (const auto& s : seeds) {
    auto r = make_session(s.id, s.created);
    r.status = s.status;
    r.metadata = s.metadata;
    r.scopes = s.scopes;
    store->insert_session(r);
  }
  using pairs = std::vector<std::pair<std::string, std::string>>;
  struct row {
    const char* name;
    std::optional<std::string> status;
    pairs metadata;
    pairs scopes;
    std::vector<std::string> expected;
  };
  const row rows[] = {
      {"all, newest first", std::nullopt, {}, {}, {"f", "e", "d", "c", "b", "a"}},
      {"status active", "active", {}, {}, {"f", "e", "c", "a"}},
      {"status error", "error", {}, {}, {"d"}},
      {"status nobody has", "bogus", {}, {}, {}},
      {"metadata team=red", std::nullopt, {{"team", "red"}}, {}, {"f", "e", "b", "a"}},
      {"metadata team=red and env=prod", std::nullopt, {{"team", "red"}, {"env", "prod"}}, {}, {"a"}},
      {"metadata value must match exactly", std::nullopt, {{"team", "re"}}, {}, {}},
      {"metadata key must match exactly", std::nullopt, {{"Team", "red"}}, {}, {}},
      {"scopes tenant=t1", std::nullopt, {}, {{"tenant", "t1"}}, {"e", "c", "a"}},
      {"scopes and metadata are separate", std::nullopt, {}, {{"team", "red"}}, {"e"}},
      {"metadata is not scopes", std::nullopt, {{"tenant", "t1"}}, {}, {}},
      {"status + metadata + scopes", "active", {{"env", "prod"}}, {{"tenant", "t1"}}, {"c", "a"}},
      {"no match", "inactive", {{"env", "prod"}}, {}, {}},
  };
  for (const auto& r : rows) {
    CAPTURE(r.name);
    session_filter f;
    f.status = r.status;
    f.metadata = r.metadata;
    f.scopes = r.scopes;
    const auto page = store->list_sessions(f);
    CHECK(ids_of(page) == r.expected);
    CHECK(page.total == static_cast<std::int64_t>(r.expected.size()));
  }
  // Oldest first, ties in insertion order (start-up walks sessions this way).
  CHECK(store->all_session_ids() == std::vector<std::string>{"a", "b", "c", "d", "e", "f"});
}

TEST_CASE_TEMPLATE("session_catalog: list_sessions pages with limit/offset; total counts every match", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  // Inserted out of creation order, ids out of order too: only created_at (then
  // insertion) orders the listing.
  for (auto [id, created] : {std::pair{"z", 3000}, std::pair{"y", 1000}, std::pair{"x", 6000}, std::pair{"w", 2000},
                             std::pair{"v", 5000}, std::pair{"u", 4000}})
    store->insert_session(make_session(id, created));
  struct row {
    std::int64_t limit, offset;
    std::vector<std::string> expected;
  };
  const row rows[] = {
      {2, 0, {"x", "v"}}, {2, 2, {"u", "z"}}, {2, 4, {"w", "y"}}, {2, 6, {}},
      {4, 5, {"y"}},      {0, 0, {}},         {1, 3, {"z"}},      {500, 0, {"x", "v", "u", "z", "w", "y"}},
  };
  for (const auto& r : rows) {
    CAPTURE(r.limit);
    CAPTURE(r.offset);
    session_filter f;
    f.limit = r.limit;
    f.offset = r.offset;
    const auto page = store->list_sessions(f);
    CHECK(ids_of(page) == r.expected);
    CHECK(page.total == 6);
  }
  CHECK(store->all_session_ids() == std::vector<std::string>{"y", "w", "z", "u", "v", "x"});
}

TEST_CASE_TEMPLATE("session_catalog: listed and found sessions carry their message count and last event id", impl,
                   AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("t", 2));
  for (std::int64_t seq = 1; seq <= 3; ++seq) store->upsert_message(make_message("s", "s-m" + std::to_string(seq), seq));
  store->append_events(make_batch("s", 1, 5));
  const auto page = store->list_sessions({});
  REQUIRE(page.sessions.size() == 2);
  CHECK(page.sessions[1].id == "s");
  CHECK(page.sessions[1].message_count == 3);
  CHECK(page.sessions[1].last_event_id == 5);
  CHECK(page.sessions[0].message_count == 0);
  CHECK(page.sessions[0].last_event_id == 0);
  CHECK(store->find_session("s")->message_count == 3);
  CHECK(store->find_session("s")->last_event_id == 5);
}

TEST_CASE_TEMPLATE("session_catalog: delete_session takes everything the session owns, nothing else", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  for (const std::string id : {"gone", "kept"}) {
    auto s = make_session(id, id == "gone" ? 1 : 2);
    s.metadata = {{"m", "1"}};
    s.scopes = {{"tenant", "t"}};
    store->insert_session(s);
    store->upsert_message(make_message(id, id + "-m1", 1));
    store->upsert_message(make_message(id, id + "-m2", 2));
    store->insert_checkpoint({"thread-" + id, id, 1, "{}", 1});
    store->append_events(make_batch(id, 1, 3));
    store->insert_idempotency_key({id, "key", "hash", "run", 0, 1});
    store->insert_webhook_delivery(make_delivery("d-" + id, id, 100));
    CHECK(store->record_webhook_attempt(make_outcome("d-" + id, 100, 500, "pending", 150)));
  }

  CHECK(store->delete_session("gone"));
  CHECK_FALSE(store->find_session("gone"));
  CHECK(store->all_session_ids() == std::vector<std::string>{"kept"});
  session_filter by_label;
  by_label.metadata = {{"m", "1"}};
  CHECK(ids_of(store->list_sessions(by_label)) == std::vector<std::string>{"kept"});
  CHECK(store->all_messages("gone").empty());
  CHECK(store->list_messages("gone", 10, 0).total == 0);
  CHECK_FALSE(store->latest_checkpoint("thread-gone"));
  CHECK(store->events_after("gone", 0, 100).empty());
  CHECK(store->oldest_event_id("gone") == 0);
  CHECK_FALSE(store->find_idempotency_key("gone", "key"));
  CHECK(store->list_webhook_deliveries("gone").empty());
  CHECK_FALSE(store->find_webhook_delivery("gone", "d-gone"));
  CHECK(ids_of(store->claim_due_webhook_deliveries(1000, 0, 10)) == std::vector<std::string>{"d-kept"});
  CHECK_FALSE(store->requeue_webhook_delivery("d-gone", 200));

  const auto kept = store->find_session("kept");
  REQUIRE(kept);
  CHECK(kept->message_count == 2);
  CHECK(kept->last_event_id == 3);
  CHECK(store->latest_checkpoint("thread-kept"));
  CHECK(ids_of(store->events_after("kept", 0, 100)) == id_range(1, 3));
  CHECK(store->find_idempotency_key("kept", "key"));
  const auto deliveries = store->list_webhook_deliveries("kept");
  REQUIRE(deliveries.size() == 1);
  CHECK(deliveries[0].attempts.size() == 1);

  CHECK_FALSE(store->delete_session("gone"));  // once
  // The id is free again, and the new session starts empty.
  store->insert_session(make_session("gone", 3));
  CHECK(store->find_session("gone")->message_count == 0);
  CHECK(store->find_session("gone")->last_event_id == 0);
  CHECK(store->events_after("gone", 0, 100).empty());
}
