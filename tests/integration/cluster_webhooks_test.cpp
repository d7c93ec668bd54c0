// Two real gateway processes on one PostgreSQL database (docs/scale-out.md,
// "Webhooks"): completion callbacks of runs on both nodes go to one receiver in
// this process that answers each delivery's first attempt with a 500 and its
// second with a 200, holding every answer a moment. Retries fall due on both
// nodes' dispatchers at once; with claims each attempt is made by exactly one
// node: the receiver sees every delivery exactly twice, never two requests of one
// delivery at the same time, and the attempts each delivery records match.
//
// Needs a PostgreSQL database: runs under integration_pg (GATEWAY_PG_URL names a
// fresh database per case); elsewhere it says so and passes.
#include <doctest/doctest.h>

#include <boost/json/serialize.hpp>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/session_fixtures.hpp"
#include "tests/support/sse_reader.hpp"
#include "tests/support/webhook_receiver.hpp"

using namespace agw::test;
using namespace agw::test::runs;

namespace {

namespace json = boost::json;

// What the receiver saw of one delivery (by webhook-id).
struct seen {
  int requests = 0;
  int at_once = 0;      // requests of it being answered right now
  int max_at_once = 0;  // the most ever at once: 1 unless two nodes attempted it together
};

std::size_t occurrences(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + needle.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("cluster webhooks: two nodes on one database make each delivery's attempts exactly once") {
  const char* pg_url = std::getenv("GATEWAY_PG_URL");
  if (!pg_url || !*pg_url) {
    MESSAGE("skipped: needs GATEWAY_PG_URL (ctest integration_pg runs it on PostgreSQL)");
    return;
  }
  std::mutex mutex;
  std::map<std::string, seen> by_webhook;
  webhook_receiver rx;
  rx.set_answer([&](const received_request& req) {
    const auto id = req.header("webhook-id");
    int nth = 0;
    {
      std::lock_guard lock(mutex);
      auto& s = by_webhook[id];
      nth = ++s.requests;
      s.max_at_once = std::max(s.max_at_once, ++s.at_once);
    }
    // Hold the answer: an attempt of the same delivery by the other node would overlap.
    std::this_thread::sleep_for(150ms);
    {
      std::lock_guard lock(mutex);
      --by_webhook[id].at_once;
    }
    return receiver_reply::with_status(nth == 1 ? 500 : 200);
  });

  // Retries fall due 50 ms after the 500; info logs name each attempt ("webhook <id> to ...").
  const gateway_process::env_map env{{"GATEWAY_STORE", "postgres"},
                                     {"GATEWAY_PG_URL", pg_url},
                                     {"GATEWAY_WEBHOOK_ALLOW_PRIVATE", "1"},
                                     {"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "0.05,0.05,0.05"},
                                     {"GATEWAY_LOG_LEVEL", "info"}};
  gateway_process a(env);
  gateway_process b(env);
  const std::uint16_t ports[] = {a.port(), b.port()};

  // 30 runs with a callback, 15 on each node, the two nodes at once.
  constexpr int per_node = 15;
  std::vector<std::string> sessions[2];
  std::vector<std::thread> posters;
  for (int n = 0; n < 2; ++n)
    posters.emplace_back([&, n] {
      for (int i = 0; i < per_node; ++i) {
        const auto sid = create_session(ports[n]);
        auto r = std::make_unique<sse_reader>(ports[n]);
        r->send("POST", messages_path(sid),
                json::serialize(json::object{{"content", "hello " + std::to_string(i)}, {"callback_url", rx.url()}}),
                json_headers);
        if (r->head.status == 200 && r->read_to_end(20s)) sessions[n].push_back(sid);
      }
    });
  for (auto& t : posters) t.join();
  REQUIRE(sessions[0].size() == per_node);
  REQUIRE(sessions[1].size() == per_node);

  // Every delivery delivered (either node answers for every session: one database).
  std::map<std::string, json::object> delivery_of;  // by webhook_id
  const bool all_delivered = eventually(
      [&] {
        delivery_of.clear();
        for (const auto& node_sessions : sessions)
          for (const auto& sid : node_sessions) {
            auto list = fixtures::get_json(ports[delivery_of.size() % 2], "/sessions/" + sid + "/webhooks");
            const auto& deliveries = list.at("deliveries").as_array();
            if (deliveries.size() != 1) return false;
            const auto& d = deliveries[0].as_object();
            if (d.at("status").as_string() != "delivered") return false;
            delivery_of[std::string(d.at("webhook_id").as_string())] = d;
          }
        return true;
      },
      40s);
  REQUIRE(all_delivered);
  REQUIRE(delivery_of.size() == 2 * per_node);

  std::lock_guard lock(mutex);
  CHECK(rx.count() == 4 * per_node);  // two attempts of each
  CHECK(by_webhook.size() == delivery_of.size());
  for (const auto& [webhook_id, d] : delivery_of) {
    CAPTURE(webhook_id);
    const auto& s = by_webhook[webhook_id];
    CHECK(s.requests == 2);
    CHECK(s.max_at_once == 1);
    // What the receiver saw is what the delivery recorded: attempt 1 a 500, attempt 2 a 200,
    // the second begun after the first's held answer came back (not alongside it).
    INFO("delivery: " << json::serialize(d));
    const auto& attempts = d.at("attempts").as_array();
    REQUIRE(attempts.size() == 2);
    CHECK(attempts[0].at("status_code").as_int64() == 500);
    CHECK(attempts[1].at("status_code").as_int64() == 200);
    const auto first_at = fixtures::parse_rfc3339_ms(attempts[0].at("at").as_string());
    const auto second_at = fixtures::parse_rfc3339_ms(attempts[1].at("at").as_string());
    REQUIRE(first_at);
    REQUIRE(second_at);
    CHECK(*second_at >= *first_at + 150);
  }
  // Each attempt is logged by the one node that made it, and both nodes made some.
  const auto log_a = a.stderr_text();
  const auto log_b = b.stderr_text();
  std::size_t attempts_a = 0, attempts_b = 0, across = 0;
  for (const auto& [webhook_id, d] : delivery_of) {
    CAPTURE(webhook_id);
    const auto on_a = occurrences(log_a, "webhook " + webhook_id + " to ");
    const auto on_b = occurrences(log_b, "webhook " + webhook_id + " to ");
    CHECK(on_a + on_b == 2);
    attempts_a += on_a;
    attempts_b += on_b;
    across += on_a == 1 && on_b == 1 ? 1 : 0;
  }
  MESSAGE("attempts made by node a: " << attempts_a << ", by node b: " << attempts_b
                                      << "; deliveries retried by the other node: " << across);
  CHECK(attempts_a > 0);
  CHECK(attempts_b > 0);
}
