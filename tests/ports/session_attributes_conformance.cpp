// session_catalog's attributes (migration 6: labels, variables, TTL and activity, the
// event webhook's cursor) and session_state_store, alike in every store.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/ports/store_impls.hpp"

using namespace agw::test;
using agw::core::session_filter;
using agw::core::string_map;

namespace {

std::vector<std::string> ids_of_records(const std::vector<agw::core::session_record>& v) {
  std::vector<std::string> out;
  for (const auto& s : v) out.push_back(s.id);
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("session attributes: round-trip and follow updates", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  auto s = make_session("s1", 1000);
  s.labels = {"vip", "a:b"};
  s.variables = {{"name", "Ann"}};
  s.ttl_seconds = 60;
  s.event_webhook_url = "https://hooks.example/x";
  store->insert_session(s);
  auto found = store->find_session("s1");
  REQUIRE(found);
  CHECK(found->labels == s.labels);
  CHECK(found->variables == s.variables);
  CHECK(found->ttl_seconds == 60);
  CHECK(found->event_webhook_url == s.event_webhook_url);
  CHECK(found->active_at_ms == 1000);  // created is the first activity

  s.labels = {"other"};
  s.variables = {};
  s.ttl_seconds.reset();
  s.event_webhook_url.reset();
  s.updated_at_ms = 2000;
  CHECK(store->update_session(s));
  found = store->find_session("s1");
  CHECK(found->labels == std::set<std::string>{"other"});
  CHECK(found->variables.empty());
  CHECK_FALSE(found->ttl_seconds);
  CHECK_FALSE(found->event_webhook_url);
  CHECK(found->active_at_ms == 2000);  // an update is activity
}

TEST_CASE_TEMPLATE("session attributes: label filters AND with each other and the rest", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  auto a = make_session("a", 1);
  a.labels = {"x", "y"};
  a.metadata = {{"team", "t"}};
  auto b = make_session("b", 2);
  b.labels = {"x"};
  auto c = make_session("c", 3);
  store->insert_session(a);
  store->insert_session(b);
  store->insert_session(c);
  session_filter f;
  f.labels = {"x"};
  CHECK(ids_of(store->list_sessions(f)) == std::vector<std::string>{"b", "a"});
  f.labels = {"x", "y"};
  CHECK(ids_of(store->list_sessions(f)) == std::vector<std::string>{"a"});
  f.labels = {"x"};
  f.metadata = {{"team", "t"}};
  CHECK(ids_of(store->list_sessions(f)) == std::vector<std::string>{"a"});
  f = {};
  f.labels = {"x"};
  f.limit = 1;
  auto page = store->list_sessions(f);
  CHECK(page.total == 2);
  CHECK(page.sessions.size() == 1);
  // Labels follow updates and deletes.
  b.labels = {};
  store->update_session(b);
  f = {};
  f.labels = {"x"};
  CHECK(ids_of(store->list_sessions(f)) == std::vector<std::string>{"a"});
  store->delete_session("a");
  CHECK(store->list_sessions(f).total == 0);
}

TEST_CASE_TEMPLATE("session attributes: idle_sessions by each session's TTL, longest idle first", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  auto by_default = make_session("d", 1000);
  auto never = make_session("n", 1000);
  never.ttl_seconds = 0;
  auto own = make_session("o", 500);
  own.ttl_seconds = 10;
  auto fresh = make_session("f", 5000);
  store->insert_session(by_default);
  store->insert_session(never);
  store->insert_session(own);
  store->insert_session(fresh);
  // Default TTL 2 s at now = 3000: d (1000) is idle, f (5000) is not; o expires at 10500.
  CHECK(ids_of_records(store->idle_sessions(3000, 2000, 10)) == std::vector<std::string>{"d"});
  CHECK(ids_of_records(store->idle_sessions(20000, 2000, 10)) == std::vector<std::string>{"o", "d", "f"});
  CHECK(ids_of_records(store->idle_sessions(20000, 2000, 2)) == std::vector<std::string>{"o", "d"});
  CHECK(ids_of_records(store->idle_sessions(20000, 0, 10)) == std::vector<std::string>{"o"});  // no default: own TTLs only
  // A message is activity: it moves active_at.
  auto m = make_message("d", "m1", 1);
  m.created_at_ms = 2900;
  store->upsert_message(m);
  CHECK(store->find_session("d")->active_at_ms == 2900);
  CHECK(store->idle_sessions(3000, 2000, 10).empty());
}

TEST_CASE_TEMPLATE("session attributes: event webhook cursors", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  auto a = make_session("a", 1);
  a.event_webhook_url = "https://h.example/a";
  auto b = make_session("b", 2);
  auto c = make_session("c", 3);
  c.event_webhook_url = "https://h.example/c";
  store->insert_session(a);
  store->insert_session(b);
  store->insert_session(c);
  auto all = store->event_webhook_cursors("", 10);
  REQUIRE(all.size() == 2);
  CHECK(all[0].session_id == "a");
  CHECK(all[0].url == "https://h.example/a");
  CHECK(all[0].forwarded_id == 0);
  CHECK(all[1].session_id == "c");
  CHECK(store->event_webhook_cursors("a", 10).size() == 1);
  CHECK(store->event_webhook_cursors("", 1).size() == 1);
  CHECK(store->advance_event_webhook_cursor("a", 7));
  CHECK(store->advance_event_webhook_cursor("a", 3));  // never backwards
  CHECK(store->find_event_webhook_cursor("a")->forwarded_id == 7);
  CHECK_FALSE(store->find_event_webhook_cursor("b"));  // no URL
  CHECK_FALSE(store->find_event_webhook_cursor("zz"));
  CHECK_FALSE(store->advance_event_webhook_cursor("zz", 1));
}

TEST_CASE_TEMPLATE("session_state_store: scopes by owner; a session's own go with it", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s1", 1));
  store->put_state("session", "s1", "k", "1", 10);
  store->put_state("user", "\nann", "lang", "\"de\"", 10);
  store->put_state("app", "", "motd", "{\"a\":1}", 10);
  store->put_state("session", "s1", "k", "2", 11);  // overwrite
  CHECK(store->read_state("session", "s1") == std::map<std::string, std::string>{{"k", "2"}});
  CHECK(store->read_state("user", "\nann") == std::map<std::string, std::string>{{"lang", "\"de\""}});
  CHECK(store->read_state("user", "\nbob").empty());
  store->delete_state("app", "", "motd");
  store->delete_state("app", "", "never-there");
  CHECK(store->read_state("app", "").empty());
  store->delete_session("s1");
  CHECK(store->read_state("session", "s1").empty());
  CHECK(store->read_state("user", "\nann").size() == 1);
}

TEST_CASE_TEMPLATE("webhook_outbox: a session notice outlives its session and is due like a delivery", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s1", 1));
  auto notice = make_delivery("n1", "s1", 100);
  store->insert_session_notice(notice);
  store->delete_session("s1");
  auto due = store->claim_due_webhook_deliveries(100, 0, 10);
  REQUIRE(due.size() == 1);
  CHECK(due[0].id == "n1");
  CHECK(due[0].session_id == "s1");
  CHECK(due[0].payload == notice.payload);
  CHECK(store->claim_due_webhook_deliveries(99, 0, 10).empty());
  CHECK(store->next_webhook_due_ms(50) == 100);
  agw::core::webhook_attempt_outcome retry{"n1", {0, 100, 503, std::nullopt, 5}, "pending", 200};
  CHECK(store->record_webhook_attempt(retry));
  CHECK(store->claim_due_webhook_deliveries(150, 0, 10).empty());
  CHECK(store->next_webhook_due_ms(150) == 200);
  agw::core::webhook_attempt_outcome done{"n1", {0, 200, 200, std::nullopt, 5}, "delivered", std::nullopt};
  CHECK(store->record_webhook_attempt(done));
  CHECK(store->claim_due_webhook_deliveries(1000, 0, 10).empty());
  CHECK_FALSE(store->record_webhook_attempt(done));  // no longer pending
}
