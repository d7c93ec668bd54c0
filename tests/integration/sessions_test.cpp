// The sessions API end to end: the real binary, real HTTP, a real SQLite file.
// CRUD, every Session field of the contract, listing, paging and filters.
#include <doctest/doctest.h>

#include <set>
#include <thread>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/session_fixtures.hpp"

using namespace agw::test;
using namespace agw::test::fixtures;

namespace {

// Every field the contract names, with its type and format.
void check_session_shape(const boost::json::object& s) {
  INFO("session: " << boost::json::serialize(s));
  for (const char* key : {"id", "thread_id", "title", "status", "agent_name", "config", "scopes", "metadata", "created_at",
                          "updated_at", "message_count", "last_event_id", "run"}) {
    INFO("field " << key);
    CHECK(s.contains(key));
  }
  REQUIRE(s.at("id").is_string());
  CHECK(is_uuid(s.at("id").as_string()));
  REQUIRE(s.at("thread_id").is_string());
  CHECK(is_uuid(s.at("thread_id").as_string()));
  CHECK(s.at("thread_id") != s.at("id"));
  CHECK((s.at("title").is_null() || s.at("title").is_string()));
  REQUIRE(s.at("status").is_string());
  const std::string status = str(s.at("status"));
  CHECK((status == "active" || status == "inactive" || status == "error"));
  CHECK(s.at("agent_name").is_string());
  CHECK(s.at("config").is_object());
  for (const char* map : {"scopes", "metadata"}) {
    REQUIRE(s.at(map).is_object());
    for (const auto& [k, v] : s.at(map).as_object()) CHECK(v.is_string());
  }
  REQUIRE(s.at("created_at").is_string());
  REQUIRE(s.at("updated_at").is_string());
  auto created = parse_rfc3339_ms(s.at("created_at").as_string());
  auto updated = parse_rfc3339_ms(s.at("updated_at").as_string());
  REQUIRE(created.has_value());
  REQUIRE(updated.has_value());
  CHECK(*updated >= *created);
  CHECK(std::llabs(*created - now_epoch_ms()) < 5 * 60 * 1000);  // a UTC clock, not local time
  CHECK(s.at("message_count").is_int64());
  CHECK(s.at("last_event_id").is_int64());
  CHECK(s.at("run").is_null());
}

std::vector<std::string> ids_of(const boost::json::value& page) {
  std::vector<std::string> out;
  for (const auto& s : page.at("sessions").as_array()) out.push_back(str(s.at("id")));
  return out;
}

}  // namespace

TEST_CASE("health and readiness") {
  gateway_process gw;
  auto health = http_call(gw.port(), "GET", "/healthz");
  CHECK(health.status == 200);
  CHECK(health.json().at("status") == "ok");
  CHECK(http_call(gw.port(), "GET", "/readyz").status == 200);
}

TEST_CASE("create, get, list, patch, delete a session") {
  gateway_process gw;
  auto created = http_call(gw.port(), "POST", "/sessions", R"({"title":"first","metadata":{"team":"a"},"scopes":{"org":"x"}})");
  REQUIRE(created.status == 201);
  auto s = created.json().as_object();
  CHECK(s.at("title") == "first");
  CHECK(s.at("status") == "active");
  CHECK(s.at("agent_name") == "default");
  CHECK(s.at("message_count") == 0);
  CHECK(s.at("last_event_id") == 0);
  CHECK(s.at("run").is_null());
  std::string id(s.at("id").as_string());

  auto got = http_call(gw.port(), "GET", "/sessions/" + id);
  CHECK(got.status == 200);
  CHECK(got.json() == created.json());

  auto listed = get_json(gw.port(), "/sessions");
  CHECK(listed.at("total") == 1);
  REQUIRE(listed.at("sessions").as_array().size() == 1);
  CHECK(listed.at("sessions").as_array()[0] == created.json());

  auto patched = http_call(gw.port(), "PATCH", "/sessions/" + id, R"({"title":"renamed","status":"inactive"})");
  CHECK(patched.status == 200);
  CHECK(patched.json().at("title") == "renamed");
  CHECK(patched.json().at("status") == "inactive");
  CHECK(patched.json().at("metadata").at("team") == "a");

  auto deleted = http_call(gw.port(), "DELETE", "/sessions/" + id);
  CHECK(deleted.status == 204);
  CHECK(deleted.body.empty());
  auto gone = http_call(gw.port(), "GET", "/sessions/" + id);
  check_error(gone, 404, "not_found");
  CHECK(get_json(gw.port(), "/sessions").at("total") == 0);
}

TEST_CASE("a new session has every contract field with its defaults") {
  gateway_process gw;
  const auto before = now_epoch_ms();
  auto r = http_call(gw.port(), "POST", "/sessions", "{}");
  const auto after = now_epoch_ms();
  REQUIRE(r.status == 201);
  CHECK(r.header("Content-Type") == "application/json; charset=utf-8");
  auto s = r.json().as_object();
  check_session_shape(s);
  CHECK(s.at("title").is_null());
  CHECK(s.at("status") == "active");
  CHECK(s.at("agent_name") == "default");
  CHECK(s.at("config") == boost::json::object{});
  CHECK(s.at("scopes") == boost::json::object{});
  CHECK(s.at("metadata") == boost::json::object{});
  CHECK(s.at("message_count") == 0);
  CHECK(s.at("last_event_id") == 0);
  CHECK(s.at("run").is_null());
  CHECK(s.at("created_at") == s.at("updated_at"));
  auto created = *parse_rfc3339_ms(s.at("created_at").as_string());
  CHECK(created >= before - 1);
  CHECK(created <= after + 1);

  SUBCASE("an empty body without Content-Type is the same as {}") {
    auto bare = http_call(gw.port(), "POST", "/sessions", "", {});
    REQUIRE(bare.status == 201);
    auto b = bare.json().as_object();
    check_session_shape(b);
    CHECK(b.at("title").is_null());
    CHECK(b.at("agent_name") == "default");
    CHECK(b.at("config") == boost::json::object{});
    CHECK(b.at("id") != s.at("id"));
  }
  SUBCASE("explicit nulls are the defaults") {
    auto n = create_session(gw.port(), R"({"title":null,"config":null,"scopes":null,"metadata":null})");
    check_session_shape(n);
    CHECK(n.at("title").is_null());
    CHECK(n.at("config") == boost::json::object{});
    CHECK(n.at("scopes") == boost::json::object{});
    CHECK(n.at("metadata") == boost::json::object{});
  }
}

TEST_CASE("create stores and echoes every supplied field exactly") {
  gateway_process gw;
  const std::string body = R"({
    "title": "Ünïcødé title \"quoted\" ✓",
    "agent_name": "researcher",
    "config": {"provider": "mock", "model": "m-1", "temperature": 0.5, "max_tokens": 256,
               "mock": {"tokens": 3, "tokens_per_second": 100, "think_ms": 0, "plan": ["a", "b"],
                        "tool_calls": [{"name": "calculator", "args": {"expression": "2+3*4"}}]}},
    "scopes": {"org": "acme", "user": "u-1"},
    "metadata": {"team": "a", "empty": "", "long key with spaces": "v=1&w=2"}
  })";
  auto s = create_session(gw.port(), body);
  check_session_shape(s);
  auto sent = boost::json::parse(body).as_object();
  CHECK(s.at("title") == sent.at("title"));
  CHECK(s.at("agent_name") == "researcher");
  CHECK(s.at("config") == sent.at("config"));
  CHECK(s.at("scopes") == sent.at("scopes"));
  CHECK(s.at("metadata") == sent.at("metadata"));
  CHECK(s.at("status") == "active");

  auto got = get_json(gw.port(), "/sessions/" + str(s.at("id")));
  CHECK(got == boost::json::value(s));
  // Case-insensitive media type and a utf-8 charset are the same JSON media type.
  auto r = http_call(gw.port(), "POST", "/sessions", R"({"title":"ct"})", {{"Content-Type", "Application/JSON; charset=UTF-8"}});
  CHECK(r.status == 201);
}

TEST_CASE("ids and thread ids are unique UUIDs and never coincide") {
  gateway_process gw;
  std::set<std::string> ids, threads;
  for (int i = 0; i < 8; ++i) {
    auto s = create_session(gw.port());
    ids.insert(str(s.at("id")));
    threads.insert(str(s.at("thread_id")));
  }
  CHECK(ids.size() == 8);
  CHECK(threads.size() == 8);
  for (const auto& t : threads) CHECK(ids.count(t) == 0);
}

TEST_CASE("patch replaces title, config, metadata and status and bumps updated_at") {
  gateway_process gw;
  auto s = create_session(gw.port(), R"({"title":"t0","agent_name":"a1","config":{"provider":"mock","temperature":1},)"
                                     R"("scopes":{"org":"x"},"metadata":{"a":"1","b":"2"}})");
  const std::string id = str(s.at("id"));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));

  auto r = http_call(gw.port(), "PATCH", "/sessions/" + id,
                     R"({"title":"t1","config":{"model":"m2","max_tokens":10},"metadata":{"c":"3"},"status":"inactive"})");
  REQUIRE(r.status == 200);
  auto p = r.json().as_object();
  check_session_shape(p);
  CHECK(p.at("id") == s.at("id"));
  CHECK(p.at("thread_id") == s.at("thread_id"));
  CHECK(p.at("title") == "t1");
  CHECK(p.at("config") == boost::json::parse(R"({"model":"m2","max_tokens":10})"));  // replaced, not merged
  CHECK(p.at("metadata") == boost::json::parse(R"({"c":"3"})"));                     // replaced, not merged
  CHECK(p.at("status") == "inactive");
  CHECK(p.at("scopes") == s.at("scopes"));
  CHECK(p.at("agent_name") == "a1");
  CHECK(p.at("created_at") == s.at("created_at"));
  CHECK(*parse_rfc3339_ms(p.at("updated_at").as_string()) > *parse_rfc3339_ms(s.at("updated_at").as_string()));
  CHECK(get_json(gw.port(), "/sessions/" + id) == boost::json::value(p));

  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto r2 = http_call(gw.port(), "PATCH", "/sessions/" + id, R"({"status":"active"})");
  REQUIRE(r2.status == 200);
  auto p2 = r2.json().as_object();
  CHECK(p2.at("status") == "active");
  CHECK(p2.at("title") == "t1");  // untouched fields stay
  CHECK(p2.at("config") == p.at("config"));
  CHECK(p2.at("metadata") == p.at("metadata"));
  CHECK(*parse_rfc3339_ms(p2.at("updated_at").as_string()) > *parse_rfc3339_ms(p.at("updated_at").as_string()));

  auto r3 = http_call(gw.port(), "PATCH", "/sessions/" + id, R"({"title":null,"metadata":{},"config":{}})");
  REQUIRE(r3.status == 200);
  CHECK(r3.json().at("title").is_null());
  CHECK(r3.json().at("metadata") == boost::json::object{});
  CHECK(r3.json().at("config") == boost::json::object{});
  CHECK(get_json(gw.port(), "/sessions/" + id) == r3.json());

  // null clears title, config and metadata; fields PATCH does not own are ignored.
  REQUIRE(http_call(gw.port(), "PATCH", "/sessions/" + id, R"({"metadata":{"m":"1"},"config":{"model":"x"}})").status == 200);
  auto r4 = http_call(gw.port(), "PATCH", "/sessions/" + id,
                      R"({"title":null,"metadata":null,"config":null,"agent_name":"other","scopes":{"z":"z"},"id":"x"})");
  REQUIRE(r4.status == 200);
  CHECK(r4.json().at("title").is_null());
  CHECK(r4.json().at("metadata") == boost::json::object{});
  CHECK(r4.json().at("config") == boost::json::object{});
  CHECK(r4.json().at("agent_name") == "a1");
  CHECK(r4.json().at("scopes") == s.at("scopes"));
  CHECK(r4.json().at("id") == s.at("id"));
  r3 = r4;

  // The list shows the patched row too.
  auto listed = get_json(gw.port(), "/sessions");
  REQUIRE(listed.at("sessions").as_array().size() == 1);
  CHECK(listed.at("sessions").as_array()[0] == r3.json());

  // Filters follow the replaced metadata, not the original one.
  REQUIRE(http_call(gw.port(), "PATCH", "/sessions/" + id, R"({"metadata":{"c":"3"}})").status == 200);
  CHECK(get_json(gw.port(), "/sessions?metadata.a=1").at("total") == 0);
  CHECK(get_json(gw.port(), "/sessions?metadata.c=3").at("total") == 1);
  CHECK(get_json(gw.port(), "/sessions?scopes.org=x").at("total") == 1);
}

TEST_CASE("delete removes the session: get, patch and delete are then 404") {
  gateway_process gw;
  auto keep = create_session(gw.port(), R"({"title":"keep"})");
  auto drop = create_session(gw.port(), R"({"title":"drop"})");
  const std::string id = str(drop.at("id"));
  auto d = http_call(gw.port(), "DELETE", "/sessions/" + id);
  CHECK(d.status == 204);
  CHECK(d.body.empty());
  check_error(http_call(gw.port(), "GET", "/sessions/" + id), 404, "not_found");
  check_error(http_call(gw.port(), "PATCH", "/sessions/" + id, R"({"title":"x"})"), 404, "not_found");
  check_error(http_call(gw.port(), "DELETE", "/sessions/" + id), 404, "not_found");
  auto listed = get_json(gw.port(), "/sessions");
  CHECK(listed.at("total") == 1);
  CHECK(ids_of(listed) == std::vector<std::string>{str(keep.at("id"))});
  CHECK(get_json(gw.port(), "/sessions/" + str(keep.at("id"))) == boost::json::value(keep));
}

TEST_CASE("list: newest first, paging with limit and offset") {
  gateway_process gw;
  std::vector<std::string> created;  // oldest first
  for (int i = 0; i < 7; ++i)
    created.push_back(str(create_session(gw.port(), R"({"title":"s)" + std::to_string(i) + R"("})").at("id")));
  const std::vector<std::string> newest_first(created.rbegin(), created.rend());

  auto all = get_json(gw.port(), "/sessions");
  CHECK(all.at("total") == 7);
  CHECK(all.at("limit") == 50);
  CHECK(all.at("offset") == 0);
  CHECK(ids_of(all) == newest_first);
  std::string previous = "9999";
  for (const auto& s : all.at("sessions").as_array()) {
    check_session_shape(s.as_object());
    CHECK(str(s.at("created_at")) <= previous);
    previous = str(s.at("created_at"));
  }

  auto page = get_json(gw.port(), "/sessions?limit=2&offset=3");
  CHECK(page.at("total") == 7);
  CHECK(page.at("limit") == 2);
  CHECK(page.at("offset") == 3);
  CHECK(ids_of(page) == std::vector<std::string>{newest_first[3], newest_first[4]});

  // Walking the pages visits every session once, in order.
  std::vector<std::string> walked;
  for (int offset = 0; offset < 7; offset += 3) {
    auto p = get_json(gw.port(), "/sessions?offset=" + std::to_string(offset) + "&limit=3");
    CHECK(p.at("total") == 7);
    for (auto& id : ids_of(p)) walked.push_back(id);
  }
  CHECK(walked == newest_first);

  auto tail = get_json(gw.port(), "/sessions?offset=6");
  CHECK(ids_of(tail) == std::vector<std::string>{newest_first[6]});
  auto beyond = get_json(gw.port(), "/sessions?offset=100&limit=5");
  CHECK(beyond.at("sessions").as_array().empty());
  CHECK(beyond.at("total") == 7);
  CHECK(beyond.at("offset") == 100);
  auto zero = get_json(gw.port(), "/sessions?limit=0");
  CHECK(zero.at("sessions").as_array().empty());
  CHECK(zero.at("total") == 7);
  CHECK(zero.at("limit") == 0);
  auto trailing_slash = get_json(gw.port(), "/sessions/?limit=1");
  CHECK(ids_of(trailing_slash) == std::vector<std::string>{newest_first[0]});
}

TEST_CASE("list: default limit 50, maximum 500 (larger limits are capped)") {
  gateway_process gw;
  std::vector<std::string> created;
  for (int i = 0; i < 55; ++i) created.push_back(str(create_session(gw.port()).at("id")));
  auto def = get_json(gw.port(), "/sessions");
  CHECK(def.at("total") == 55);
  CHECK(def.at("limit") == 50);
  CHECK(def.at("sessions").as_array().size() == 50);
  CHECK(ids_of(def).front() == created.back());

  for (std::string limit : {"100000", "501", "99999999999999999999999"}) {
    INFO("limit=" << limit);
    auto capped = get_json(gw.port(), "/sessions?limit=" + limit);
    CHECK(capped.at("limit") == 500);
    CHECK(capped.at("total") == 55);
    CHECK(capped.at("sessions").as_array().size() == 55);
  }
  auto exact = get_json(gw.port(), "/sessions?limit=500");
  CHECK(exact.at("limit") == 500);
  auto rest = get_json(gw.port(), "/sessions?offset=50");
  CHECK(rest.at("sessions").as_array().size() == 5);
  CHECK(ids_of(rest).back() == created.front());
}

TEST_CASE("list: metadata, scopes and status filters, ANDed, percent-decoded") {
  gateway_process gw;
  auto a = create_session(gw.port(), R"({"title":"a","metadata":{"team":"red","tier":"gold"},"scopes":{"org":"acme"}})");
  auto b = create_session(gw.port(), R"({"title":"b","metadata":{"team":"red","tier":"silver"},"scopes":{"org":"other"}})");
  auto c = create_session(gw.port(), R"({"title":"c","metadata":{"team":"blue"},"scopes":{"org":"acme","user":"u1"}})");
  auto d = create_session(
      gw.port(),
      R"({"title":"d","metadata":{"team name":"a&b=c","plus":"1+1","café":"crème","k.v":"dot"},"scopes":{"org":"acme"}})");
  REQUIRE(http_call(gw.port(), "PATCH", "/sessions/" + str(c.at("id")), R"({"status":"inactive"})").status == 200);
  const std::string A = str(a.at("id")), B = str(b.at("id")), C = str(c.at("id")), D = str(d.at("id"));

  struct filter_case {
    std::string query;
    std::vector<std::string> expected;  // newest first
  };
  const std::vector<filter_case> cases = {
      {"metadata.team=red", {B, A}},
      {"metadata.team=blue", {C}},
      {"metadata.team=green", {}},
      {"metadata.tier=gold", {A}},
      {"metadata.team=red&metadata.tier=silver", {B}},
      {"metadata.team=red&metadata.tier=bronze", {}},
      {"scopes.org=acme", {D, C, A}},
      {"scopes.user=u1", {C}},
      {"scopes.org=acme&metadata.team=red", {A}},
      {"status=inactive", {C}},
      {"status=active", {D, B, A}},
      {"status=error", {}},
      {"status=active&scopes.org=acme", {D, A}},
      {"status=inactive&metadata.team=red", {}},
      {"status=active&scopes.org=acme&metadata.tier=gold&limit=10&offset=0", {A}},
      {"metadata.team%20name=a%26b%3Dc", {D}},  // encoded space, & and = in key and value
      {"metadata.team+name=a%26b%3Dc", {D}},    // '+' in a query is a space
      {"metadata.plus=1%2B1", {D}},             // an encoded '+' is a plus
      {"metadata.plus=1+1", {}},                // ... and a bare one is not
      {"metadata.caf%C3%A9=cr%C3%A8me", {D}},   // UTF-8, percent-encoded
      {"metadata.k.v=dot", {D}},                // a key containing a dot
      {"metadata.k%2Ev=dot", {D}},
      {"%6Detadata.team=blue", {C}},  // an encoded parameter name
      {"metadata.TEAM=red", {}},      // keys are case-sensitive
      {"metadata.team=RED", {}},      // values too
      {"scopes.team=red", {}},        // metadata is not a scope
      {"metadata.org=acme", {}},      // and scopes are not metadata
  };
  for (const auto& fc : cases) {
    INFO("GET /sessions?" << fc.query);
    auto page = get_json(gw.port(), "/sessions?" + fc.query);
    CHECK(ids_of(page) == fc.expected);
    CHECK(page.at("total") == static_cast<std::int64_t>(fc.expected.size()));
  }
  // total counts all matches, not just the page.
  auto paged = get_json(gw.port(), "/sessions?scopes.org=acme&limit=1&offset=1");
  CHECK(paged.at("total") == 3);
  CHECK(ids_of(paged) == std::vector<std::string>{C});
}
