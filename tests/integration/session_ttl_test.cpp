// Session TTL end to end (docs/sessions.md, "TTL"), on an injected clock: the test
// moves the sweep's "now" with GATEWAY_TEST_CLOCK_OFFSET_FILE (test only) instead of
// waiting. Idle sessions are expired as DELETE removes them; expires_at is shown; a
// session's own ttl_seconds wins over GATEWAY_SESSION_TTL (0: never).
#include <doctest/doctest.h>

#include <fstream>
#include <thread>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/session_fixtures.hpp"
#include "tests/support/sse_reader.hpp"
#include "tests/support/webhook_receiver.hpp"

using namespace agw::test;
using namespace agw::test::fixtures;

namespace {

void set_offset(const std::string& file, std::int64_t ms) { std::ofstream(file, std::ios::trunc) << ms << "\n"; }

bool gone(std::uint16_t port, const std::string& id) { return http_call(port, "GET", "/sessions/" + id).status == 404; }

}  // namespace

TEST_CASE("session ttl: idle sessions expire on the injected clock, each by its own TTL") {
  temp_dir dir;
  const auto offset = (dir.path() / "offset").string();
  set_offset(offset, 0);
  gateway_process gw(
      {{"GATEWAY_SESSION_TTL", "3600"}, {"GATEWAY_SESSION_SWEEP_INTERVAL", "0.1"}, {"GATEWAY_TEST_CLOCK_OFFSET_FILE", offset}});
  const auto port = gw.port();
  auto by_default = create_session(port);
  auto never = create_session(port, R"({"ttl_seconds":0})");
  auto longer = create_session(port, R"({"ttl_seconds":7200})");
  const std::string a = str(by_default.at("id")), b = str(never.at("id")), c = str(longer.at("id"));

  // expires_at: the last activity plus the effective TTL; null when it never expires.
  auto created = *parse_rfc3339_ms(by_default.at("created_at").as_string());
  CHECK(*parse_rfc3339_ms(by_default.at("expires_at").as_string()) == created + 3600 * 1000);
  CHECK(never.at("expires_at").is_null());
  CHECK(never.at("ttl_seconds") == 0);
  CHECK(*parse_rfc3339_ms(longer.at("expires_at").as_string()) ==
        *parse_rfc3339_ms(longer.at("created_at").as_string()) + 7200 * 1000);
  CHECK(by_default.at("ttl_seconds").is_null());

  // A run on c is activity: it moves c's expiry.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  runs::run_message(port, c, "still here");
  auto after_run = get_json(port, "/sessions/" + c);
  CHECK(*parse_rfc3339_ms(after_run.at("expires_at").as_string()) > *parse_rfc3339_ms(longer.at("expires_at").as_string()));

  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(!gone(port, a));  // nothing moves before the clock does

  set_offset(offset, 3601 * 1000);
  CHECK(runs::eventually([&] { return gone(port, a); }));
  CHECK(!gone(port, b));
  CHECK(!gone(port, c));
  // Deleted as by DELETE: its messages and state too.
  check_error(http_call(port, "GET", "/sessions/" + a + "/messages"), 404, "not_found");

  set_offset(offset, 7300 * 1000);
  CHECK(runs::eventually([&] { return gone(port, c); }));
  CHECK(!gone(port, b));
  CHECK(get_json(port, "/sessions").at("total") == 1);
}

TEST_CASE("session ttl: a run going for longer than the TTL is aborted with its session") {
  temp_dir dir;
  const auto offset = (dir.path() / "offset").string();
  set_offset(offset, 0);
  gateway_process gw(
      {{"GATEWAY_SESSION_TTL", "60"}, {"GATEWAY_SESSION_SWEEP_INTERVAL", "0.1"}, {"GATEWAY_TEST_CLOCK_OFFSET_FILE", offset}});
  const auto port = gw.port();
  const auto id = runs::create_mock_session(port, R"({"tokens":2000,"tokens_per_second":10})");
  auto run = runs::start_message(port, id, "a long answer");
  REQUIRE(run->head.status == 200);
  REQUIRE(run->read_until([](const runs::sse_parser& p) { return p.of_type("token").size() >= 2; }, std::chrono::seconds(10)));
  set_offset(offset, 61 * 1000);
  // The stream ends long before the run's 200 s, and the session is gone.
  CHECK(run->read_to_end(std::chrono::seconds(10)));
  CHECK(runs::eventually([&] { return gone(port, id); }));
}

TEST_CASE("session ttl: an expiring session with an event webhook sends session.expired") {
  temp_dir dir;
  const auto offset = (dir.path() / "offset").string();
  set_offset(offset, 0);
  webhook_receiver rx;
  gateway_process gw({{"GATEWAY_SESSION_TTL", "60"},
                      {"GATEWAY_SESSION_SWEEP_INTERVAL", "0.1"},
                      {"GATEWAY_TEST_CLOCK_OFFSET_FILE", offset},
                      {"GATEWAY_WEBHOOK_ALLOW_PRIVATE", "1"},
                      {"GATEWAY_WEBHOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}});
  const auto port = gw.port();
  const auto id = str(create_session(port, R"({"event_webhook_url":")" + rx.url() + "\"}").at("id"));
  const auto quiet = str(create_session(port).at("id"));
  set_offset(offset, 61 * 1000);
  CHECK(runs::eventually([&] { return gone(port, id) && gone(port, quiet); }));
  auto expired = [&] {
    for (const auto& r : rx.requests()) {
      auto body = boost::json::parse(r.body);
      if (body.at("type") == "session.expired") return body;
    }
    return boost::json::value();
  };
  CHECK(runs::eventually([&] { return !expired().is_null(); }));
  auto notice = expired();
  REQUIRE(notice.is_object());
  CHECK(notice.at("session_id") == boost::json::value(id));
  CHECK(parse_rfc3339_ms(notice.at("expired_at").as_string()).has_value());
  for (const auto& r : rx.requests()) CHECK(!r.header("webhook-signature").empty());
}

TEST_CASE("session ttl: bad ttl_seconds is a 400 and changes nothing") {
  gateway_process gw;
  const auto port = gw.port();
  auto s = create_session(port, R"({"ttl_seconds":100})");
  const std::string id = str(s.at("id"));
  for (const char* body : {R"({"ttl_seconds":-1})", R"({"ttl_seconds":"10"})", R"({"ttl_seconds":1.5})",
                           R"({"ttl_seconds":99999999999})", R"({"ttl_seconds":10,"title":7})"}) {
    INFO(body);
    check_error(http_call(port, "PATCH", "/sessions/" + id, body), 400, "bad_request");
    check_error(http_call(port, "POST", "/sessions", body), 400, "bad_request");
  }
  CHECK(get_json(port, "/sessions/" + id).at("ttl_seconds") == 100);
  CHECK(get_json(port, "/sessions").at("total") == 1);
  // GATEWAY_SESSION_TTL is checked at start-up.
  auto refused = run_gateway_command({}, {{"GATEWAY_SESSION_TTL", "-5"}});
  CHECK(refused.status == 2);
}
