// Session state scopes end to end (docs/sessions.md, "State"): plain keys per session,
// user: keys shared by the sessions of one scopes.user, app: keys shared by all, temp:
// keys the live run's only (gone when it ends, never stored); the merged view on read;
// a PATCH applies whole or not at all.
#include <doctest/doctest.h>

#include <cstdlib>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/session_fixtures.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::fixtures;

namespace {

boost::json::object state_of(std::uint16_t port, const std::string& id) {
  return get_json(port, "/sessions/" + id + "/state").at("state").as_object();
}

http_reply patch_state(std::uint16_t port, const std::string& id, std::string_view body) {
  return http_call(port, "PATCH", "/sessions/" + id + "/state", body);
}

}  // namespace

TEST_CASE("session state: scopes across two sessions of one user and one of another") {
  gateway_process gw;
  const auto port = gw.port();
  const auto a1 = str(create_session(port, R"({"scopes":{"user":"ann"}})").at("id"));
  const auto a2 = str(create_session(port, R"({"scopes":{"user":"ann"}})").at("id"));
  const auto b = str(create_session(port, R"({"scopes":{"user":"bob"}})").at("id"));

  auto r = patch_state(port, a1, R"({"step":1,"user:lang":"de","app:motd":{"text":"hi"}})");
  REQUIRE(r.status == 200);
  CHECK(r.json().at("state") == boost::json::parse(R"({"step":1,"user:lang":"de","app:motd":{"text":"hi"}})"));

  // a2: the same user, so user: and app:, but not a1's own keys.
  CHECK(state_of(port, a2) == boost::json::parse(R"({"user:lang":"de","app:motd":{"text":"hi"}})").as_object());
  // b: another user: app: only.
  CHECK(state_of(port, b) == boost::json::parse(R"({"app:motd":{"text":"hi"}})").as_object());

  // A change through one session is seen by the others of its scope; null deletes.
  REQUIRE(patch_state(port, a2, R"({"user:lang":"fr","app:motd":null,"step":"own"})").status == 200);
  CHECK(state_of(port, a1) == boost::json::parse(R"({"step":1,"user:lang":"fr"})").as_object());
  CHECK(state_of(port, a2) == boost::json::parse(R"({"step":"own","user:lang":"fr"})").as_object());
  CHECK(state_of(port, b).empty());

  // Deleting a session drops its own keys, never its user's.
  REQUIRE(http_call(port, "DELETE", "/sessions/" + a1).status == 204);
  CHECK(state_of(port, a2) == boost::json::parse(R"({"step":"own","user:lang":"fr"})").as_object());
  check_error(http_call(port, "GET", "/sessions/" + a1 + "/state"), 404, "not_found");

  // Persisted: a restart keeps every stored scope.
  gw.terminate();
  gw.start();
  CHECK(state_of(gw.port(), a2) == boost::json::parse(R"({"step":"own","user:lang":"fr"})").as_object());
}

TEST_CASE("session state: temp: keys live with the live run only and are never stored") {
  gateway_process gw;
  const auto port = gw.port();
  const auto id = str(create_session(port, R"({"config":{"mock":{"tokens":40,"tokens_per_second":20}}})").at("id"));
  // No live run: temp: has nothing to belong to.
  check_error(patch_state(port, id, R"({"temp:scratch":1})"), 400, "bad_request");

  auto run = runs::start_message(port, id, "hello");
  REQUIRE(run->head.status == 200);
  auto r = patch_state(port, id, R"({"temp:scratch":{"n":1},"kept":true})");
  REQUIRE(r.status == 200);
  CHECK(r.json().at("state") == boost::json::parse(R"({"kept":true,"temp:scratch":{"n":1}})"));
  CHECK(state_of(port, id) == boost::json::parse(R"({"kept":true,"temp:scratch":{"n":1}})").as_object());
  // Never written to the database (the SQLite file; integration_pg runs on PostgreSQL).
  const char* store = std::getenv("GATEWAY_STORE");
  if (runs::sqlite3_available() && !(store && std::string(store) == "postgres")) {
    auto [status, out] = runs::sqlite3_exec(gw.db_path(), "SELECT count(*) FROM session_state WHERE key = 'scratch';");
    CHECK(status == 0);
    CHECK(out.find('0') == 0);
  }
  REQUIRE(run->read_to_end(std::chrono::seconds(20)));
  // The run ended: its temp: keys went with it.
  CHECK(runs::eventually([&] { return !state_of(port, id).contains("temp:scratch"); }));
  CHECK(state_of(port, id) == boost::json::parse(R"({"kept":true})").as_object());
}

TEST_CASE("session state: a bad key rejects the whole PATCH and changes nothing") {
  gateway_process gw;
  const auto port = gw.port();
  const auto id = str(create_session(port, R"({"scopes":{"user":"ann"}})").at("id"));
  const auto no_user = str(create_session(port).at("id"));
  REQUIRE(patch_state(port, id, R"({"a":1})").status == 200);
  const std::string big(17 * 1024, 'x');
  for (const std::string& body : {std::string(R"({"b":2,"bad:prefix":1})"), std::string(R"({"b":2,"":1})"),
                                  std::string(R"({"b":2,"user:":1})"), std::string(R"({"b":2,"temp:t":1})") /* no live run */,
                                  std::string("[1]"), std::string("{}"), std::string(R"({"b":2,"huge":")") + big + "\"}",
                                  std::string(R"({"b":2,"app:x":1,"user:)") + std::string(200, 'k') + "\":1}"}) {
    INFO("body " << body.substr(0, 80));
    check_error(patch_state(port, id, body), 400, "bad_request");
  }
  check_error(patch_state(port, no_user, R"({"ok":1,"user:x":1})"), 400, "bad_request");
  check_error(patch_state(port, "00000000-0000-4000-8000-000000000000", R"({"a":1})"), 404, "not_found");
  CHECK(state_of(port, id) == boost::json::parse(R"({"a":1})").as_object());
  CHECK(state_of(port, no_user).empty());
}
