// The sessions API end to end: the real binary, real HTTP, a real SQLite file.
#include <doctest/doctest.h>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"

using namespace agw::test;

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

  auto patched = http_call(gw.port(), "PATCH", "/sessions/" + id, R"({"title":"renamed","status":"inactive"})");
  CHECK(patched.status == 200);
  CHECK(patched.json().at("title") == "renamed");
  CHECK(patched.json().at("status") == "inactive");
  CHECK(patched.json().at("metadata").at("team") == "a");

  CHECK(http_call(gw.port(), "DELETE", "/sessions/" + id).status == 204);
  auto gone = http_call(gw.port(), "GET", "/sessions/" + id);
  CHECK(gone.status == 404);
  CHECK(gone.json().at("error").at("code") == "not_found");
}
