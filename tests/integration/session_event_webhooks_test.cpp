// Event webhooks end to end (docs/sessions.md, "Event webhooks"): every event of a
// session with event_webhook_url reaches the receiver, batched, signed, in order, with
// ids to de-duplicate on; across a kill -9 mid-run and a restart on the same database,
// every event id of the log arrives (exactly once after de-duplication). The URL meets
// the callbacks' SSRF guard before anything is stored or sent.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/session_fixtures.hpp"
#include "tests/support/sse_reader.hpp"
#include "tests/support/webhook_receiver.hpp"

using namespace agw::test;
using namespace std::chrono_literals;

namespace {

const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

gateway_process::env_map private_env() {
  return {{"GATEWAY_WEBHOOK_ALLOW_PRIVATE", "1"},
          {"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "0.05,0.1,0.1,0.2,0.5,1,1,1"},
          {"GATEWAY_WEBHOOK_SECRET", secret}};
}

// Every event id in the session's log, through the JSON cursor.
std::map<std::int64_t, std::string> log_events(std::uint16_t port, const std::string& sid) {
  std::map<std::int64_t, std::string> out;
  std::int64_t after = 0;
  for (int page = 0; page < 1000; ++page) {
    auto r = http_call(port, "GET", "/sessions/" + sid + "/events?after=" + std::to_string(after), {},
                       {{"Accept", "application/json"}});
    REQUIRE(r.status == 200);
    const auto page_json = r.json();  // named: `events` refers into it
    const auto& events = page_json.at("events").as_array();
    if (events.empty()) break;
    for (const auto& e : events) {
      after = e.at("id").as_int64();
      out[after] = std::string(e.at("event").as_string());
    }
  }
  return out;
}

struct received_events {
  std::map<std::int64_t, std::string> by_id;  // id -> the event's serialized form, first seen
  std::size_t duplicates = 0;
  std::vector<std::string> problems;
  std::vector<std::int64_t> first_ids;  // of each batch, in arrival order
};

received_events collect(const webhook_receiver& rx, const std::string& sid) {
  received_events out;
  for (const auto& req : rx.requests()) {
    auto body = boost::json::parse(req.body).as_object();
    if (body.at("type") != "session.events") continue;
    if (body.at("session_id") != boost::json::value(sid)) out.problems.push_back("another session's batch");
    if (req.header("webhook-signature").empty()) out.problems.push_back("an unsigned batch");
    if (!req.header("webhook-id").starts_with("msg_")) out.problems.push_back("no webhook-id");
    const auto& events = body.at("events").as_array();
    if (events.empty()) out.problems.push_back("an empty batch");
    std::int64_t prev = 0;
    for (const auto& e : events) {
      const auto id = e.at("id").as_int64();
      if (id <= prev) out.problems.push_back("a batch out of id order");
      prev = id;
      auto text = boost::json::serialize(e);
      auto [it, fresh] = out.by_id.emplace(id, text);
      if (!fresh) {
        ++out.duplicates;
        if (it->second != text) out.problems.push_back("event " + std::to_string(id) + " sent twice with different contents");
      }
    }
    if (!events.empty()) {
      out.first_ids.push_back(events.front().at("id").as_int64());
      if (body.at("first_event_id") != events.front().at("id") || body.at("last_event_id") != events.back().at("id"))
        out.problems.push_back("first/last_event_id do not match the events");
    }
  }
  return out;
}

std::set<std::int64_t> keys(const auto& m) {
  std::set<std::int64_t> out;
  for (const auto& [k, v] : m) out.insert(k);
  return out;
}

}  // namespace

TEST_CASE("session event webhooks: every event of a run, batched, signed, in order") {
  webhook_receiver rx;
  gateway_process gw(private_env());
  const auto port = gw.port();
  auto s = fixtures::create_session(
      port, R"({"config":{"mock":{"tokens":30,"tokens_per_second":100}},"event_webhook_url":")" + rx.url() + "\"}");
  const std::string sid = fixtures::str(s.at("id"));
  CHECK(s.at("event_webhook_url") == boost::json::value(rx.url()));
  runs::run_message(port, sid, "hello");
  const auto log = log_events(port, sid);
  REQUIRE(log.size() == 33);  // status, 30 tokens, usage, done
  CHECK(runs::eventually([&] { return keys(collect(rx, sid).by_id) == keys(log); }));
  auto got = collect(rx, sid);
  for (const auto& p : got.problems) FAIL_CHECK(p);
  // In order: each batch starts after the one before (no retries here, so no repeats).
  CHECK(std::is_sorted(got.first_ids.begin(), got.first_ids.end()));
  CHECK(got.duplicates == 0);
  // Recorded like callbacks: GET /sessions/{id}/webhooks lists the deliveries.
  auto deliveries = fixtures::get_json(port, "/sessions/" + sid + "/webhooks");
  CHECK(!deliveries.at("deliveries").as_array().empty());
}

TEST_CASE("session event webhooks: every event id exactly once after de-duplication, across kill -9 mid-run") {
  webhook_receiver rx;
  gateway_process gw(private_env());
  auto sid = fixtures::str(fixtures::create_session(gw.port(), R"({"config":{"mock":{"tokens":400,"tokens_per_second":100}},)"
                                                               R"("event_webhook_url":")" +
                                                                   rx.url() + "\"}")
                               .at("id"));
  auto run = runs::start_message(gw.port(), sid, "a long answer");
  REQUIRE(run->head.status == 200);
  // Some batches are out before the crash: the restart must continue, not start over.
  REQUIRE(rx.wait_for(2, 10s));
  gw.kill9();
  gw.start();
  const auto port = gw.port();
  // Recovery closes the interrupted run (its closing events join the log).
  CHECK(runs::eventually([&] { return fixtures::get_json(port, "/sessions/" + sid).at("run").is_null(); }));
  const auto log = log_events(port, sid);
  REQUIRE(log.size() > 2);
  CHECK(runs::eventually([&] { return keys(collect(rx, sid).by_id) == keys(log); }, 15s));
  auto got = collect(rx, sid);
  for (const auto& p : got.problems) FAIL_CHECK(p);
  CHECK(keys(got.by_id) == keys(log));
  // Nothing past the log: an id the crash took back (never committed) is never sent.
  CHECK(got.by_id.rbegin()->first == log.rbegin()->first);
}

TEST_CASE("session event webhooks: a private target is refused before anything is stored or sent") {
  webhook_receiver rx;
  gateway_process gw;  // no GATEWAY_WEBHOOK_ALLOW_PRIVATE: loopback is refused
  const auto port = gw.port();
  fixtures::check_error(http_call(port, "POST", "/sessions", R"({"event_webhook_url":")" + rx.url() + "\"}"), 400, "bad_request");
  auto s = fixtures::create_session(port);
  const std::string sid = fixtures::str(s.at("id"));
  fixtures::check_error(http_call(port, "PATCH", "/sessions/" + sid, R"({"event_webhook_url":")" + rx.url() + "\"}"), 400,
                        "bad_request");
  for (const char* bad : {R"({"event_webhook_url":"ftp://example.com/x"})", R"({"event_webhook_url":5})",
                          R"({"event_webhook_url":"http://user:pw@example.com/"})"}) {
    INFO(bad);
    fixtures::check_error(http_call(port, "PATCH", "/sessions/" + sid, bad), 400, "bad_request");
  }
  runs::run_message(port, sid, "hello");
  std::this_thread::sleep_for(500ms);
  CHECK(rx.count() == 0);
  CHECK(fixtures::get_json(port, "/sessions/" + sid).at("event_webhook_url").is_null());
  CHECK(fixtures::get_json(port, "/sessions").at("total") == 1);
}
