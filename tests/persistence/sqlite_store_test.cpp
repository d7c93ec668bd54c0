#include "persistence/sqlite_store.hpp"

#include <doctest/doctest.h>

#include <sqlite3.h>

#include <boost/json/parse.hpp>
#include <functional>
#include <string>
#include <vector>

#include "tests/persistence/sqlite_fixture.hpp"

namespace {

using agw::core::checkpoint_record;
using agw::core::idempotency_record;
using agw::core::session_filter;
using agw::core::session_record;
using agw::core::store_error;
using agw::persistence::sqlite_store;
using agw::test::count_rows;
using agw::test::make_batch;
using agw::test::make_message;
using agw::test::make_session;
using agw::test::temp_db;

std::vector<std::string> ids_of(const agw::core::session_page& page) {
  std::vector<std::string> out;
  for (const auto& s : page.sessions) out.push_back(s.id);
  return out;
}

std::vector<std::int64_t> seqs_of(const std::vector<agw::core::message_record>& messages) {
  std::vector<std::int64_t> out;
  for (const auto& m : messages) out.push_back(m.seq);
  return out;
}

// The text of the store_error `f` throws ("" when it does not throw).
template <class F>
std::string store_error_of(F f) {
  try {
    f();
  } catch (const store_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("sqlite_store: session insert and find round trip") {
  temp_db db;
  auto store = db.open();
  session_record s = make_session("s1", 1700000000000);
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
  CHECK(plain->status == "active");
  CHECK_FALSE(store->find_session("nope"));
  CHECK_FALSE(store->find_session(""));
  CHECK(store->all_session_ids() == std::vector<std::string>{"s2", "s1"});  // oldest first
}

TEST_CASE("sqlite_store: constraint violations are store_errors and change nothing") {
  temp_db db;
  auto store = db.open();
  store->insert_session(make_session("s1", 1));
  struct row {
    const char* name;
    std::function<void()> op;
    const char* mentions;
  };
  auto dup_thread = make_session("s2", 2);
  dup_thread.thread_id = "thread-s1";
  auto bad_status = make_session("s3", 3);
  bad_status.status = "deleted";
  const std::vector<row> rows = {
      {"duplicate session id", [&] { store->insert_session(make_session("s1", 9)); }, "UNIQUE"},
      {"duplicate thread id", [&] { store->insert_session(dup_thread); }, "UNIQUE"},
      {"status outside the CHECK", [&] { store->insert_session(bad_status); }, "CHECK"},
      {"message of an unknown session", [&] { store->upsert_message(make_message("nope", "m1", 1)); }, "FOREIGN KEY"},
      {"events of an unknown session", [&] { store->append_events(make_batch("nope", 1, 2)); }, "FOREIGN KEY"},
      {"checkpoint of an unknown session",
       [&] {
         store->insert_checkpoint({"t", "nope", 1, "{}", 0});
       },
       "FOREIGN KEY"},
      {"idempotency key of an unknown session",
       [&] {
         store->insert_idempotency_key({"nope", "k", "h", "r", 0, 0});
       },
       "FOREIGN KEY"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.name);
    const auto message = store_error_of(r.op);
    CHECK(message.find(r.mentions) != std::string::npos);
  }
  CHECK(store->all_session_ids() == std::vector<std::string>{"s1"});
  CHECK(store->find_session("s1")->created_at_ms == 1);
}

TEST_CASE("sqlite_store: update_session") {
  temp_db db;
  auto store = db.open();
  auto s = make_session("s1", 1);
  s.metadata = {{"a", "1"}};
  store->insert_session(s);

  s.title = "new";
  s.status = "error";
  s.config = {{"model", "m"}};
  s.metadata = {{"b", "2"}};
  s.updated_at_ms = 99;
  s.created_at_ms = 12345;  // not updatable
  s.last_event_id = 555;    // not updatable: derived from the event log
  CHECK(store->update_session(s));
  const auto found = store->find_session("s1");
  REQUIRE(found);
  CHECK(found->title == "new");
  CHECK(found->status == "error");
  CHECK(found->config == boost::json::object{{"model", "m"}});
  CHECK(found->metadata == agw::core::string_map{{"b", "2"}});
  CHECK(found->updated_at_ms == 99);
  CHECK(found->created_at_ms == 1);
  CHECK(found->last_event_id == 0);

  // The filter labels follow the update.
  session_filter old_label;
  old_label.metadata = {{"a", "1"}};
  CHECK(store->list_sessions(old_label).total == 0);
  session_filter new_label;
  new_label.metadata = {{"b", "2"}};
  CHECK(ids_of(store->list_sessions(new_label)) == std::vector<std::string>{"s1"});

  CHECK_FALSE(store->update_session(make_session("nope", 1)));
  CHECK_FALSE(store->find_session("nope"));
}

TEST_CASE("sqlite_store: a read_snapshot's statements see one commit, whatever commits meanwhile") {
  // list_webhook_deliveries reads rows and then their children in separate statements;
  // another connection may commit between them. Inside a read_snapshot the reader still
  // sees the state it started from.
  temp_db db;
  auto reader = db.open();
  auto writer = db.open();
  auto s = make_session("s1", 1);
  s.title = "before";
  writer->insert_session(s);
  {
    const sqlite_store::read_snapshot snapshot(*reader);
    CHECK(reader->find_session("s1")->title == "before");
    s.title = "after";
    writer->begin_batch();
    CHECK(writer->update_session(s));
    writer->commit_batch();
    CHECK(reader->find_session("s1")->title == "before");
  }
  CHECK_FALSE(reader->batch_open());
  CHECK(reader->find_session("s1")->title == "after");
  // Inside a batch it opens nothing and ends nothing: the batch's transaction stays.
  writer->begin_batch();
  { const sqlite_store::read_snapshot inside(*writer); }
  CHECK(writer->batch_open());
  writer->commit_batch();
  // One that read nothing ends harmlessly.
  { const sqlite_store::read_snapshot idle(*reader); }
  CHECK_FALSE(reader->batch_open());
}

namespace {

// Runs `between` once, when the connection's second SELECT starts: a commit from another
// connection lands between a listing's count and its page.
struct second_select_hook {
  std::function<void()> between;
  int selects = 0;
  static int on_statement(unsigned, void* self, void* statement, void*) {
    auto& hook = *static_cast<second_select_hook*>(self);
    const std::string sql = sqlite3_sql(static_cast<sqlite3_stmt*>(statement));
    if (sql.starts_with("SELECT") && ++hook.selects == 2) hook.between();
    return 0;
  }
  void install(sqlite_store& store) {
    sqlite3_trace_v2(store.database().handle(), SQLITE_TRACE_STMT, &second_select_hook::on_statement, this);
  }
  static void remove(sqlite_store& store) { sqlite3_trace_v2(store.database().handle(), 0, nullptr, nullptr); }
};

}  // namespace

TEST_CASE("sqlite_store: a listing's total and its page come from one commit, whatever commits between them") {
  temp_db db;
  auto reader = db.open();
  auto writer = db.open();
  writer->insert_session(make_session("s1", 1));
  writer->upsert_message(make_message("s1", "m1", 1));

  second_select_hook sessions{[&] {
    writer->begin_batch();
    writer->insert_session(make_session("s2", 2));
    writer->commit_batch();
  }};
  sessions.install(*reader);
  const auto page = reader->list_sessions(session_filter{});
  second_select_hook::remove(*reader);
  REQUIRE(sessions.selects >= 2);  // the other connection did commit between the two
  CHECK(page.total == 1);
  CHECK(page.sessions.size() == 1);

  second_select_hook messages{[&] {
    writer->begin_batch();
    writer->upsert_message(make_message("s1", "m2", 2));
    writer->commit_batch();
  }};
  messages.install(*reader);
  const auto listed = reader->list_messages("s1", 50, 0);
  second_select_hook::remove(*reader);
  REQUIRE(messages.selects >= 2);
  CHECK(listed.total == 1);
  CHECK(listed.messages.size() == 1);

  // Afterwards both show the newer state.
  CHECK(reader->list_sessions(session_filter{}).total == 2);
  CHECK(reader->list_messages("s1", 50, 0).messages.size() == 2);
}

TEST_CASE("sqlite_store: delete_session cascades to everything the session owns") {
  temp_db db;
  auto store = db.open();
  for (const char* id : {"gone", "kept"}) {
    auto s = make_session(id, 1);
    s.metadata = {{"m", "1"}};
    s.scopes = {{"tenant", "t"}};
    store->insert_session(s);
    store->upsert_message(make_message(id, std::string(id) + "-m1", 1));
    store->upsert_message(make_message(id, std::string(id) + "-m2", 2));
    store->insert_checkpoint({"thread-" + std::string(id), id, 1, "{}", 1});
    store->append_events(make_batch(id, 1, 3));
    store->insert_idempotency_key({id, "key", "hash", "run", 0, 1});
    auto st = store->database().prepare_uncached(
        "INSERT INTO webhook_deliveries (id, webhook_id, session_id, run_id, url, payload, status, created_at) "
        "VALUES (?, ?, ?, 'r', 'http://x', '{}', 'pending', 0)");
    st.bind(1, std::string("d-") + id).bind(2, std::string("w-") + id).bind(3, std::string(id)).run();
    auto at = store->database().prepare_uncached(
        "INSERT INTO webhook_attempts (delivery_id, attempt, at, duration_ms) VALUES (?, 1, 0, 5)");
    at.bind(1, std::string("d-") + id).run();
  }
  const char* tables[] = {"session_labels", "messages", "checkpoints", "event_batches", "idempotency_keys", "webhook_deliveries"};
  for (const char* t : tables) CHECK(count_rows(*store, t, "gone") > 0);

  CHECK(store->delete_session("gone"));
  CHECK_FALSE(store->find_session("gone"));
  for (const char* t : tables) {
    CAPTURE(t);
    CHECK(count_rows(*store, t, "gone") == 0);
    CHECK(count_rows(*store, t, "kept") > 0);
  }
  auto attempts = store->database().prepare_uncached("SELECT COUNT(*) FROM webhook_attempts");
  attempts.step();
  CHECK(attempts.int64(0) == 1);
  CHECK_FALSE(store->latest_checkpoint("thread-gone"));
  CHECK(store->events_after("gone", 0, 100).empty());
  CHECK_FALSE(store->find_idempotency_key("gone", "key"));
  CHECK(store->all_messages("gone").empty());

  CHECK_FALSE(store->delete_session("gone"));
  CHECK_FALSE(store->delete_session("never"));
  CHECK(store->find_session("kept")->message_count == 2);
}

TEST_CASE("sqlite_store: list_sessions filters, pages and orders newest first") {
  temp_db db;
  auto store = db.open();
  struct seed {
    const char* id;
    std::int64_t created;
    const char* status;
    agw::core::string_map metadata;
    agw::core::string_map scopes;
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
      {"all", std::nullopt, {}, {}, {"f", "e", "d", "c", "b", "a"}},
      {"status active", "active", {}, {}, {"f", "e", "c", "a"}},
      {"status error", "error", {}, {}, {"d"}},
      {"metadata team=red", std::nullopt, {{"team", "red"}}, {}, {"f", "e", "b", "a"}},
      {"metadata team=red and env=prod", std::nullopt, {{"team", "red"}, {"env", "prod"}}, {}, {"a"}},
      {"metadata value must match exactly", std::nullopt, {{"team", "re"}}, {}, {}},
      {"scopes tenant=t1", std::nullopt, {}, {{"tenant", "t1"}}, {"e", "c", "a"}},
      {"scopes and metadata are separate", std::nullopt, {}, {{"team", "red"}}, {"e"}},
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

  // Paging: total counts every match, the page holds limit from offset.
  struct page_row {
    std::int64_t limit, offset;
    std::vector<std::string> expected;
  };
  const page_row pages[] = {
      {2, 0, {"f", "e"}},
      {2, 2, {"d", "c"}},
      {2, 4, {"b", "a"}},
      {2, 6, {}},
      {4, 5, {"a"}},
      {0, 0, {}},
      {500, 0, {"f", "e", "d", "c", "b", "a"}},
  };
  for (const auto& p : pages) {
    CAPTURE(p.limit);
    CAPTURE(p.offset);
    session_filter f;
    f.limit = p.limit;
    f.offset = p.offset;
    const auto page = store->list_sessions(f);
    CHECK(ids_of(page) == p.expected);
    CHECK(page.total == 6);
  }
}

TEST_CASE("sqlite_store: messages upsert, list order and count") {
  temp_db db;
  auto store = db.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("other", 2));
  auto tool_user = make_message("s", "m2", 2);
  tool_user.tool_calls = boost::json::parse(R"([{"id":"call_1","name":"calculator","args":{"expression":"1+1"}}])").as_array();
  tool_user.model_used = "mock";
  tool_user.token_count = 12;
  tool_user.parent_id = "m1";
  auto tool = make_message("s", "m3", 3);
  tool.role = "tool";
  tool.tool_call_id = "call_1";
  // Inserted out of order: reads order by seq.
  store->upsert_message(tool);
  store->upsert_message(make_message("s", "m1", 1));
  store->upsert_message(tool_user);
  store->upsert_message(make_message("other", "o1", 1));

  CHECK(seqs_of(store->all_messages("s")) == std::vector<std::int64_t>{1, 2, 3});
  struct row {
    std::int64_t limit, offset;
    std::vector<std::int64_t> expected;  // newest first
  };
  const row rows[] = {{10, 0, {3, 2, 1}}, {2, 0, {3, 2}}, {2, 1, {2, 1}}, {2, 3, {}}, {0, 0, {}}};
  for (const auto& r : rows) {
    CAPTURE(r.limit);
    CAPTURE(r.offset);
    const auto page = store->list_messages("s", r.limit, r.offset);
    CHECK(seqs_of(page.messages) == r.expected);
    CHECK(page.total == 3);
  }
  CHECK(store->list_messages("nope", 10, 0).total == 0);

  const auto all = store->all_messages("s");
  const auto& m2 = all[1];
  CHECK(m2.id == "m2");
  CHECK(m2.session_id == "s");
  CHECK(m2.role == "assistant");
  CHECK(m2.content == "content of m2");
  CHECK(m2.tool_calls == tool_user.tool_calls);
  CHECK(m2.model_used == "mock");
  CHECK(m2.token_count == 12);
  CHECK(m2.parent_id == "m1");
  CHECK_FALSE(m2.tool_call_id);
  CHECK(m2.status == "complete");
  CHECK(m2.created_at_ms == 1002);
  CHECK(all[2].tool_call_id == "call_1");
  CHECK_FALSE(all[0].token_count);
  CHECK(all[0].tool_calls.empty());

  // Upsert by id replaces the row in place.
  auto edited = make_message("s", "m3", 3);
  edited.content = "partial";
  edited.status = "interrupted";
  store->upsert_message(edited);
  CHECK(store->all_messages("s").size() == 3);
  CHECK(store->all_messages("s")[2].content == "partial");
  CHECK(store->all_messages("s")[2].status == "interrupted");
  CHECK_FALSE(store->all_messages("s")[2].tool_call_id);
  CHECK(store->find_session("s")->message_count == 3);
  CHECK(store->find_session("other")->message_count == 1);

  // A second message at a taken position is refused.
  CHECK(store_error_of([&] { store->upsert_message(make_message("s", "m9", 2)); }).find("UNIQUE") != std::string::npos);

  store->delete_messages("s");
  CHECK(store->all_messages("s").empty());
  CHECK(store->find_session("s")->message_count == 0);
  CHECK(store->all_messages("other").size() == 1);
}

TEST_CASE("sqlite_store: latest_checkpoint is the highest version of the thread") {
  temp_db db;
  auto store = db.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("s2", 2));
  CHECK_FALSE(store->latest_checkpoint("thread-s"));
  store->insert_checkpoint({"thread-s", "s", 1, R"({"v":1})", 10});
  store->insert_checkpoint({"thread-s", "s", 3, R"({"v":3})", 30});
  store->insert_checkpoint({"thread-s", "s", 2, R"({"v":2})", 20});
  store->insert_checkpoint({"thread-s2", "s2", 9, R"({"v":9})", 90});
  const auto latest = store->latest_checkpoint("thread-s");
  REQUIRE(latest);
  CHECK(latest->thread_id == "thread-s");
  CHECK(latest->session_id == "s");
  CHECK(latest->version == 3);
  CHECK(latest->state == R"({"v":3})");
  CHECK(latest->created_at_ms == 30);
  CHECK(store->latest_checkpoint("thread-s2")->version == 9);
  CHECK_FALSE(store->latest_checkpoint("thread-none"));
  // A version is written once.
  CHECK(store_error_of([&] { store->insert_checkpoint({"thread-s", "s", 3, "{}", 31}); }).find("UNIQUE") != std::string::npos);
  CHECK(store->latest_checkpoint("thread-s")->state == R"({"v":3})");
}

TEST_CASE("sqlite_store: idempotency keys insert, find, purge") {
  temp_db db;
  auto store = db.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("s2", 1));
  store->insert_idempotency_key({"s", "k1", "hash1", "run-1", 10, 1000});
  store->insert_idempotency_key({"s", "k2", "hash2", "run-2", 20, 2000});
  store->insert_idempotency_key({"s2", "k1", "hash3", "run-3", 30, 3000});

  const auto found = store->find_idempotency_key("s", "k1");
  REQUIRE(found);
  CHECK(found->session_id == "s");
  CHECK(found->key == "k1");
  CHECK(found->content_hash == "hash1");
  CHECK(found->run_id == "run-1");
  CHECK(found->first_event_id == 10);
  CHECK(found->created_at_ms == 1000);
  CHECK(store->find_idempotency_key("s2", "k1")->run_id == "run-3");  // keys are per session
  CHECK_FALSE(store->find_idempotency_key("s", "k3"));
  CHECK_FALSE(store->find_idempotency_key("s3", "k1"));
  CHECK_FALSE(store->find_idempotency_key("s", "K1"));

  CHECK(store_error_of([&] {
          store->insert_idempotency_key({"s", "k1", "other", "run-9", 0, 5000});
        }).find("UNIQUE") != std::string::npos);
  CHECK(store->find_idempotency_key("s", "k1")->run_id == "run-1");

  store->purge_idempotency_keys(2000);  // strictly older than 2000
  CHECK_FALSE(store->find_idempotency_key("s", "k1"));
  CHECK(store->find_idempotency_key("s", "k2"));
  CHECK(store->find_idempotency_key("s2", "k1"));
  store->purge_idempotency_keys(1'000'000);
  CHECK_FALSE(store->find_idempotency_key("s", "k2"));
  CHECK_FALSE(store->find_idempotency_key("s2", "k1"));
}

TEST_CASE("sqlite_store: batch transactions and savepoints") {
  temp_db db;
  auto store = db.open();
  store->begin_batch();
  store->savepoint();
  store->insert_session(make_session("kept", 1));
  store->release_savepoint();
  store->savepoint();
  store->insert_session(make_session("undone", 2));
  store->rollback_to_savepoint();
  store->release_savepoint();
  store->savepoint();
  store->insert_session(make_session("kept2", 3));
  store->release_savepoint();
  store->commit_batch();
  CHECK(store->all_session_ids() == std::vector<std::string>{"kept", "kept2"});

  store->begin_batch();
  store->insert_session(make_session("rolled-back", 4));
  store->rollback_batch();
  CHECK(store->all_session_ids() == std::vector<std::string>{"kept", "kept2"});
  CHECK_NOTHROW(store->rollback_batch());  // no transaction: nothing to do

  // A failed statement inside a savepoint leaves the batch usable.
  store->begin_batch();
  store->savepoint();
  CHECK_THROWS_AS(store->insert_session(make_session("kept", 5)), store_error);
  store->rollback_to_savepoint();
  store->release_savepoint();
  store->savepoint();
  store->insert_session(make_session("after-error", 6));
  store->release_savepoint();
  store->commit_batch();
  CHECK(store->all_session_ids() == std::vector<std::string>{"kept", "kept2", "after-error"});
}

TEST_CASE("sqlite_store: two connections see each other's committed writes (WAL)") {
  temp_db db;
  auto a = db.open();
  auto b = db.open();
  a->begin_batch();
  a->insert_session(make_session("s", 1));
  a->append_events(make_batch("s", 1, 2));
  // B reads while A's write transaction is open: not blocked, sees the old state.
  CHECK_FALSE(b->find_session("s"));
  CHECK(b->events_after("s", 0, 10).empty());
  a->commit_batch();
  REQUIRE(b->find_session("s"));
  CHECK(b->find_session("s")->last_event_id == 2);
  CHECK(b->events_after("s", 0, 10).size() == 2);

  b->begin_batch();
  b->upsert_message(make_message("s", "m1", 1));
  b->commit_batch();
  CHECK(a->find_session("s")->message_count == 1);
  CHECK(a->all_messages("s").size() == 1);
}
