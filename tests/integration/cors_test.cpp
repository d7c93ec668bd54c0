// CORS on the real binary (GATEWAY_CORS_ORIGINS): preflights from an allowed and
// a refused origin, the headers on ordinary and streamed answers, and nothing at
// all when CORS is off.
#include <doctest/doctest.h>

#include <chrono>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/session_fixtures.hpp"

using namespace agw::test;
using namespace agw::test::fixtures;
using namespace std::chrono_literals;

namespace {

const std::string allowed = "https://app.example:8443";
const std::string refused = "https://evil.example";

http_reply preflight(std::uint16_t port, const std::string& origin, const std::string& path = "/sessions") {
  return http_call(port, "OPTIONS", path, {},
                   {{"Origin", origin},
                    {"Access-Control-Request-Method", "POST"},
                    {"Access-Control-Request-Headers", "authorization, content-type, idempotency-key"}});
}

bool has_cors_headers(const http_reply& r) {
  for (const auto& [name, value] : r.headers)
    if (name.size() >= 15 && std::equal(name.begin(), name.begin() + 15, "access-control-",
                                        [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; }))
      return true;
  return false;
}

bool lists(const std::string& header, const std::string& item) {
  std::string lower_header, lower_item;
  for (char c : header) lower_header += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (char c : item) lower_item += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower_header.find(lower_item) != std::string::npos;
}

}  // namespace

TEST_CASE("cors: a preflight from an allowed origin is a 204 naming the methods and headers a front end needs") {
  gateway_process gw(
      {{"GATEWAY_CORS_ORIGINS", "http://localhost:5173, " + allowed}, {"GATEWAY_API_KEYS", "cors-key-0123456789abcdef"}});
  auto r = preflight(gw.port(), allowed);
  CHECK(r.status == 204);  // before auth: a preflight carries no Authorization
  CHECK(r.header("Access-Control-Allow-Origin") == allowed);
  for (const char* method : {"GET", "POST", "PATCH", "DELETE"}) CHECK(lists(r.header("Access-Control-Allow-Methods"), method));
  for (const char* h : {"Authorization", "Content-Type", "Last-Event-ID", "Idempotency-Key"})
    CHECK(lists(r.header("Access-Control-Allow-Headers"), h));
  CHECK(std::stoi(r.header("Access-Control-Max-Age")) > 0);
  CHECK(lists(r.header("Vary"), "Origin"));
  CHECK(r.header("Access-Control-Allow-Credentials").empty());
  CHECK(r.body.empty());
  // The other listed origin too, on another path.
  CHECK(preflight(gw.port(), "http://localhost:5173", "/sessions/x/events").header("Access-Control-Allow-Origin") ==
        "http://localhost:5173");
}

TEST_CASE("cors: a refused origin gets no CORS headers, on a preflight or an answer") {
  gateway_process gw({{"GATEWAY_CORS_ORIGINS", allowed}});
  auto r = preflight(gw.port(), refused);
  INFO("preflight answer " << r.status);
  CHECK_FALSE(has_cors_headers(r));
  CHECK(r.status != 200);
  // An origin differing only in port or scheme is another origin.
  CHECK_FALSE(has_cors_headers(preflight(gw.port(), "https://app.example")));
  CHECK_FALSE(has_cors_headers(preflight(gw.port(), "http://app.example:8443")));
  auto answer = http_call(gw.port(), "GET", "/sessions", {}, {{"Origin", refused}});
  CHECK(answer.status == 200);
  CHECK_FALSE(has_cors_headers(answer));
}

TEST_CASE("cors: answers to an allowed origin carry Allow-Origin and expose X-Run-Id and Content-Location, streams too") {
  gateway_process gw({{"GATEWAY_CORS_ORIGINS", allowed}});
  const header_list from_app{{"Content-Type", "application/json"}, {"Origin", allowed}};
  auto created = http_call(gw.port(), "POST", "/sessions", "{}", from_app);
  REQUIRE(created.status == 201);
  CHECK(created.header("Access-Control-Allow-Origin") == allowed);
  CHECK(lists(created.header("Vary"), "Origin"));
  const std::string sid = str(created.json().at("id"));
  // Error answers too: the front end must be able to read the error body.
  auto missing = http_call(gw.port(), "GET", "/sessions/00000000-0000-4000-8000-000000000000", {}, from_app);
  CHECK(missing.status == 404);
  CHECK(missing.header("Access-Control-Allow-Origin") == allowed);

  http_client c(gw.port(), 10s);
  c.send_raw(raw_request("POST", "/sessions/" + sid + "/messages", R"({"content":"hi there"})",
                         {{"Content-Type", "application/json"}, {"Origin", allowed}}));
  auto head = c.read_head();
  REQUIRE(head.status == 200);
  CHECK(head.header("Access-Control-Allow-Origin") == allowed);
  for (const char* h : {"X-Run-Id", "Content-Location"}) CHECK(lists(head.header("Access-Control-Expose-Headers"), h));
  CHECK(!head.header("X-Run-Id").empty());

  http_client follower(gw.port(), 10s);
  follower.send_raw(raw_request("GET", "/sessions/" + sid + "/events", {}, {{"Origin", allowed}, {"Last-Event-ID", "0"}}));
  auto events = follower.read_head();
  CHECK(events.status == 200);
  CHECK(events.header("Access-Control-Allow-Origin") == allowed);
}

TEST_CASE("cors: '*' allows any origin without credentials; CORS off adds nothing") {
  {
    gateway_process gw(gateway_process::env_map{{"GATEWAY_CORS_ORIGINS", "*"}});
    auto r = preflight(gw.port(), refused);
    CHECK(r.status == 204);
    CHECK(r.header("Access-Control-Allow-Origin") == "*");
    CHECK(r.header("Access-Control-Allow-Credentials").empty());
    CHECK(http_call(gw.port(), "GET", "/sessions", {}, {{"Origin", refused}}).header("Access-Control-Allow-Origin") == "*");
  }
  {
    gateway_process gw;
    CHECK_FALSE(has_cors_headers(preflight(gw.port(), allowed)));
    CHECK_FALSE(has_cors_headers(http_call(gw.port(), "GET", "/sessions", {}, {{"Origin", allowed}})));
  }
  auto bad = run_gateway_command({}, {{"GATEWAY_CORS_ORIGINS", "https://app.example/path"}}, 10s);
  CHECK(bad.status > 0);
  CHECK(bad.output.find("GATEWAY_CORS_ORIGINS") != std::string::npos);
}

TEST_CASE("cors: a 429 to an allowed origin carries Allow-Origin, so the browser can read its Retry-After") {
  gateway_process gw(
      gateway_process::env_map{{"GATEWAY_CORS_ORIGINS", allowed}, {"GATEWAY_RATE_LIMIT", "1"}, {"GATEWAY_RATE_BURST", "1"}});
  const std::vector<std::pair<std::string, std::string>> from_app{{"Origin", allowed}};
  REQUIRE(http_call(gw.port(), "GET", "/sessions", {}, from_app).status == 200);
  auto limited = http_call(gw.port(), "GET", "/sessions", {}, from_app);
  REQUIRE(limited.status == 429);
  CHECK(limited.header("Access-Control-Allow-Origin") == allowed);
  CHECK(lists(limited.header("Access-Control-Expose-Headers"), "Retry-After"));
  CHECK(!limited.header("Retry-After").empty());
}
