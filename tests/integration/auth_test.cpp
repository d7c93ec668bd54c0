// Auth on the real binary: API keys as Authorization: Bearer, stream tokens as
// ?token= on GET /sessions/{id}/events only, tenant-scoped keys, the /metrics
// key, and the keys file re-read on SIGHUP.
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/session_fixtures.hpp"

using namespace agw::test;
using namespace agw::test::fixtures;
using namespace std::chrono_literals;

namespace {

const std::string alpha_key = "alpha-key-0123456789abcdef";
const std::string beta_key = "beta-key-0123456789abcdef";
const std::string admin_key = "admin-key-0123456789abcdef";

header_list with_key(const std::string& key, header_list headers = {{"Content-Type", "application/json"}}) {
  headers.emplace_back("Authorization", "Bearer " + key);
  return headers;
}

http_reply call(std::uint16_t port, std::string_view method, const std::string& target, const std::string& key,
                std::string_view body = {}) {
  return http_call(port, method, target, body, key.empty() ? header_list{{"Content-Type", "application/json"}} : with_key(key));
}

std::string create_with(std::uint16_t port, const std::string& key, std::string_view body = "{}") {
  auto r = call(port, "POST", "/sessions", key, body);
  INFO("create: " << r.status << " " << r.body);
  REQUIRE(r.status == 201);
  return str(r.json().at("id"));
}

std::string token_for(std::uint16_t port, const std::string& sid, const std::string& key) {
  auto r = call(port, "POST", "/sessions/" + sid + "/stream-token", key);
  INFO("stream-token: " << r.status << " " << r.body);
  REQUIRE(r.status == 200);
  CHECK(parse_rfc3339_ms(r.json().at("expires_at").as_string()).has_value());
  return str(r.json().at("token"));
}

// GET /events as the long-poll cursor (a plain reply), authenticated by ?token= only.
http_reply poll_with_token(std::uint16_t port, const std::string& sid, const std::string& token) {
  return http_call(port, "GET", "/sessions/" + sid + "/events?after=0&token=" + token, {}, {{"Accept", "application/json"}});
}

// GET /events as an EventSource opens it: the status of the stream's head.
int subscribe_with_token(std::uint16_t port, const std::string& sid, const std::string& token) {
  http_client c(port, 5s);
  c.send_raw("GET /sessions/" + sid + "/events?token=" + token +
             " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n");
  auto head = c.read_head();
  if (head.status == 200) CHECK(head.header("Content-Type") == "text/event-stream");
  return head.status;
}

void check_unauthorized(const http_reply& r) {
  check_error(r, 401, "unauthorized");
  CHECK(r.header("WWW-Authenticate").starts_with("Bearer"));
}

}  // namespace

TEST_CASE("auth off: no key needed, and a stream token is still issued and accepted") {
  gateway_process gw;
  auto sid = create_with(gw.port(), "");
  CHECK(call(gw.port(), "GET", "/sessions/" + sid, "").status == 200);
  auto token = token_for(gw.port(), sid, "");
  // The token is taken off the query: the cursor does not see an unknown parameter.
  CHECK(poll_with_token(gw.port(), sid, token).status == 200);
  CHECK(subscribe_with_token(gw.port(), sid, token) == 200);
}

TEST_CASE("auth on: a missing or wrong key is a 401 that changes nothing; health and the page stay open") {
  gateway_process gw({{"GATEWAY_API_KEYS", alpha_key + "," + admin_key}});
  const auto port = gw.port();
  check_unauthorized(call(port, "POST", "/sessions", "", R"({"title":"x"})"));
  check_unauthorized(call(port, "POST", "/sessions", "wrong-key-0123456789abcdef", R"({"title":"x"})"));
  check_unauthorized(call(port, "POST", "/sessions", alpha_key + "x", R"({"title":"x"})"));
  check_unauthorized(http_call(port, "GET", "/sessions", {}, {{"Authorization", "Basic " + alpha_key}}));
  check_unauthorized(call(port, "GET", "/metrics", ""));
  CHECK(call(port, "GET", "/sessions", admin_key).json().at("total") == 0);  // the refused POSTs stored nothing

  CHECK(http_call(port, "GET", "/healthz").status == 200);
  CHECK(http_call(port, "GET", "/readyz").status == 200);
  CHECK(http_call(port, "GET", "/").status == 200);

  auto sid = create_with(port, alpha_key);
  CHECK(call(port, "GET", "/sessions/" + sid, admin_key).status == 200);
  CHECK(call(port, "GET", "/metrics", alpha_key).status == 200);
  // Lower-case scheme is the same scheme (RFC 9110 §11.1).
  CHECK(http_call(port, "GET", "/sessions/" + sid, {}, {{"Authorization", "bearer " + alpha_key}}).status == 200);
  check_unauthorized(call(port, "GET", "/sessions/" + sid, ""));
}

TEST_CASE("auth on: a stream token opens its own session's /events only, until it expires") {
  gateway_process gw({{"GATEWAY_API_KEYS", alpha_key}, {"GATEWAY_STREAM_TOKEN_TTL", "1.5"}});
  const auto port = gw.port();
  auto sid = create_with(port, alpha_key);
  auto other = create_with(port, alpha_key);
  check_unauthorized(call(port, "POST", "/sessions/" + sid + "/stream-token", ""));
  auto token = token_for(port, sid, alpha_key);

  CHECK(poll_with_token(port, sid, token).status == 200);
  CHECK(subscribe_with_token(port, sid, token) == 200);
  // Another session's events, any other route, a tampered token, or no token: 401.
  check_unauthorized(poll_with_token(port, other, token));
  check_unauthorized(http_call(port, "GET", "/sessions/" + sid + "?token=" + token));
  check_unauthorized(http_call(port, "GET", "/sessions/" + sid + "/messages?token=" + token));
  check_unauthorized(http_call(port, "POST", "/sessions/" + sid + "/messages?token=" + token, R"({"content":"hi"})"));
  check_unauthorized(http_call(port, "POST", "/sessions/" + sid + "/stream-token?token=" + token));
  std::string tampered = token;
  tampered.back() = tampered.back() == 'A' ? 'B' : 'A';
  check_unauthorized(poll_with_token(port, sid, tampered));
  check_unauthorized(poll_with_token(port, sid, "not-a-token"));
  CHECK(call(port, "GET", "/sessions/" + sid + "/messages", alpha_key).json().at("total") == 0);

  std::this_thread::sleep_for(1600ms);
  auto expired = poll_with_token(port, sid, token);
  check_unauthorized(expired);
  CHECK(expired.body.find("expired") != std::string::npos);
  CHECK(subscribe_with_token(port, sid, token) == 401);
}

TEST_CASE("auth on: a tenant's key sees only its tenant's sessions (others are 404) and lists are filtered") {
  gateway_process gw({{"GATEWAY_API_KEYS", alpha_key + ":alpha," + beta_key + ":beta," + admin_key}});
  const auto port = gw.port();
  auto mine = create_with(port, alpha_key, R"({"title":"a","scopes":{"org":"x"}})");
  auto theirs = create_with(port, beta_key);
  auto unscoped = create_with(port, admin_key);
  auto s = call(port, "GET", "/sessions/" + mine, alpha_key).json();
  CHECK(s.at("scopes").at("tenant") == "alpha");
  CHECK(s.at("scopes").at("org") == "x");
  // Naming another tenant when creating is refused, and stores nothing.
  check_error(call(port, "POST", "/sessions", alpha_key, R"({"scopes":{"tenant":"beta"}})"), 400, "bad_request");

  for (const auto& [method, suffix] : std::vector<std::pair<std::string, std::string>>{{"GET", ""},
                                                                                       {"PATCH", ""},
                                                                                       {"DELETE", ""},
                                                                                       {"GET", "/messages"},
                                                                                       {"POST", "/messages"},
                                                                                       {"POST", "/abort"},
                                                                                       {"GET", "/events"},
                                                                                       {"POST", "/stream-token"},
                                                                                       {"GET", "/webhooks"}}) {
    INFO(method << " /sessions/{beta's}" << suffix);
    const std::string body = method == "PATCH" ? R"({"title":"stolen"})" : method == "POST" ? R"({"content":"hi"})" : "";
    check_error(call(port, method, "/sessions/" + theirs + suffix, alpha_key, body), 404, "not_found");
    check_error(call(port, method, "/sessions/" + unscoped + suffix, alpha_key, body), 404, "not_found");
  }
  // Untouched by the refused requests.
  auto kept = call(port, "GET", "/sessions/" + theirs, beta_key).json();
  CHECK(kept.at("title").is_null());
  CHECK(kept.at("message_count") == 0);

  auto alpha_list = call(port, "GET", "/sessions", alpha_key).json();
  CHECK(alpha_list.at("total") == 1);
  CHECK(str(alpha_list.at("sessions").at(0).at("id")) == mine);
  // A client filter on another tenant finds nothing: filters are ANDed with the key's.
  CHECK(call(port, "GET", "/sessions?scopes.tenant=beta", alpha_key).json().at("total") == 0);
  CHECK(call(port, "GET", "/sessions", beta_key).json().at("total") == 1);
  CHECK(call(port, "GET", "/sessions", admin_key).json().at("total") == 3);
  CHECK(call(port, "GET", "/sessions/" + theirs, admin_key).status == 200);
}

TEST_CASE("auth: /metrics takes only its own key when one is configured") {
  gateway_process gw({{"GATEWAY_API_KEYS", alpha_key}, {"GATEWAY_METRICS_KEY", "metrics-key-0123456789abcdef"}});
  check_unauthorized(call(gw.port(), "GET", "/metrics", ""));
  check_unauthorized(call(gw.port(), "GET", "/metrics", alpha_key));
  CHECK(call(gw.port(), "GET", "/metrics", "metrics-key-0123456789abcdef").status == 200);
  check_unauthorized(call(gw.port(), "GET", "/sessions", "metrics-key-0123456789abcdef"));
}

TEST_CASE("auth: the keys file is re-read on SIGHUP; a bad file keeps the previous keys") {
  temp_dir dir;
  const auto path = (dir.path() / "keys").string();
  std::ofstream(path) << "# one key a line\n" << alpha_key << "\n";
  gateway_process gw({{"GATEWAY_API_KEYS_FILE", path}});
  const auto port = gw.port();
  CHECK(call(port, "GET", "/sessions", alpha_key).status == 200);
  CHECK(call(port, "GET", "/sessions", beta_key).status == 401);

  std::ofstream(path) << beta_key << ":beta\n";
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  bool swapped = false;
  for (int i = 0; i < 100 && !swapped; ++i) {
    swapped = call(port, "GET", "/sessions", beta_key).status == 200;
    if (!swapped) std::this_thread::sleep_for(50ms);
  }
  CHECK(swapped);
  CHECK(call(port, "GET", "/sessions", alpha_key).status == 401);

  std::ofstream(path) << "short\n";
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  std::this_thread::sleep_for(300ms);
  CHECK(call(port, "GET", "/sessions", beta_key).status == 200);
  CHECK(gw.stderr_text().find("previous keys stay") != std::string::npos);
}

TEST_CASE("auth: bad key settings stop start-up with a clear message") {
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"GATEWAY_API_KEYS", "short"},
                                                        {"GATEWAY_API_KEYS", alpha_key + ","},
                                                        {"GATEWAY_API_KEYS", alpha_key + ":"},
                                                        {"GATEWAY_API_KEYS_FILE", "/nonexistent/keys"},
                                                        {"GATEWAY_METRICS_KEY", "short"},
                                                        {"GATEWAY_STREAM_TOKEN_SECRET", "too-short"},
                                                        {"GATEWAY_STREAM_TOKEN_TTL", "0"}}) {
    INFO(name << "=" << value);
    auto r = run_gateway_command({}, {{name, value}}, 10s);
    INFO("output: " << r.output);
    CHECK_FALSE(r.timed_out);
    CHECK(r.status > 0);
    CHECK(r.output.find(name) != std::string::npos);
  }
}
