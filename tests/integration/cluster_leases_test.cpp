// Run ownership across nodes (docs/scale-out.md, "Run ownership"): TWO real binaries
// on ONE PostgreSQL database, hit directly on 127.0.0.1. Only on the PostgreSQL store
// (ctest integration_pg sets GATEWAY_STORE / GATEWAY_PG_URL for each case); skipped
// on SQLite, where one process owns every run.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::runs;
using namespace std::chrono_literals;

namespace {

// A 2 s lease: failover within about lease + sweep interval (1 s). gateway_process
// keeps the test's own GATEWAY_* out of the child's environment: the store is passed on.
gateway_process::env_map node_env(const std::string& name) {
  return {{"GATEWAY_RUN_LEASE", "2"},
          {"GATEWAY_NODE_ID", name},
          {"GATEWAY_STORE", "postgres"},
          {"GATEWAY_PG_URL", runner_setting("PG_URL")}};
}

const header_list accept_json{{"Accept", "application/json"}};

// Every event of the session in the log, from node `port`'s JSON cursor.
boost::json::array all_events(std::uint16_t port, const std::string& sid) {
  boost::json::array out;
  std::int64_t after = 0;
  for (int page = 0; page < 100; ++page) {
    auto r = http_call(port, "GET", "/sessions/" + sid + "/events?after=" + std::to_string(after) + "&wait=0", {}, accept_json);
    REQUIRE(r.status == 200);
    auto events = r.json().at("events").as_array();
    if (events.empty()) break;
    for (auto& e : events) out.push_back(e);
    after = out.back().at("id").as_int64();
  }
  return out;
}

void check_gap_free(const boost::json::array& events) {
  for (std::size_t i = 0; i < events.size(); ++i) CHECK(events[i].at("id").as_int64() == static_cast<std::int64_t>(i + 1));
}

}  // namespace

TEST_CASE("cluster leases: messages racing on two nodes start exactly one run; the other is a 409") {
  if (!on_postgres()) return;
  gateway_process a(node_env("node-a")), b(node_env("node-b"));
  for (int round = 0; round < 20; ++round) {
    // A slow run: the winner is still live when the loser's job decides.
    const std::string sid = create_mock_session(a.port(), R"({"tokens":3,"think_ms":1500})");
    auto on_a = std::async(std::launch::async, [&] { return start_message(a.port(), sid, "from a"); });
    auto on_b = std::async(std::launch::async, [&] { return start_message(b.port(), sid, "from b"); });
    auto ra = on_a.get();
    auto rb = on_b.get();
    INFO("round " << round << ": a " << ra->head.status << " " << ra->head.body << ", b " << rb->head.status << " "
                  << rb->head.body);
    const int ok = (ra->head.status == 200) + (rb->head.status == 200);
    const int conflicts = (ra->head.status == 409) + (rb->head.status == 409);
    CHECK(ok == 1);
    CHECK(conflicts == 1);
    if (ok != 1) continue;
    auto& winner = ra->head.status == 200 ? ra : rb;
    auto& loser = ra->head.status == 200 ? rb : ra;
    const auto body = try_json(loser->head.body);
    REQUIRE(body.has_value());
    CHECK(body->at("error").at("code") == "run_in_progress");
    CHECK(body->at("error").at("run_id") == jstr(winner->head.header("X-Run-Id")));
    REQUIRE(winner->read_to_end(10s));
    // One user message, one answer: the loser stored nothing.
    CHECK(get_messages(a.port(), sid).size() == 2);
  }
}

TEST_CASE("cluster leases: the same Idempotency-Key on both nodes starts one run") {
  if (!on_postgres()) return;
  gateway_process a(node_env("node-a")), b(node_env("node-b"));
  const std::string sid = create_mock_session(a.port(), R"({"tokens":3,"think_ms":1000})");
  const header_list key{{"Idempotency-Key", "order-7"}};
  auto on_a = std::async(std::launch::async, [&] { return start_message(a.port(), sid, "once", key); });
  auto on_b = std::async(std::launch::async, [&] { return start_message(b.port(), sid, "once", key); });
  auto ra = on_a.get();
  auto rb = on_b.get();
  INFO("a " << ra->head.status << " " << ra->head.body << ", b " << rb->head.status << " " << rb->head.body);
  REQUIRE(ra->head.status == 200);
  REQUIRE(rb->head.status == 200);
  CHECK(ra->head.header("X-Run-Id") == rb->head.header("X-Run-Id"));
  REQUIRE(eventually([&] { return get_messages(a.port(), sid).size() == 2; }, 10s));
  std::this_thread::sleep_for(300ms);
  CHECK(get_messages(b.port(), sid).size() == 2);  // one user message, one answer
}

TEST_CASE("cluster leases: kill -9 of the owner mid-run: the survivor closes the run as interrupted, once") {
  if (!on_postgres()) return;
  gateway_process a(node_env("node-a")), b(node_env("node-b"));
  const std::string sid = create_mock_session(a.port(), R"({"tokens":200,"tokens_per_second":20})");
  auto live = start_message(a.port(), sid, "long answer");
  REQUIRE(live->head.status == 200);
  const std::string run_id = live->head.header("X-Run-Id");
  REQUIRE(live->read_until([](const sse_parser& p) { return p.count("token") >= 5; }, 10s));
  a.kill9();
  const auto killed = std::chrono::steady_clock::now();

  // Within about lease + sweep interval (bounded at 3 x lease).
  bool closed = eventually(
      [&] {
        auto messages = get_messages(b.port(), sid);
        return messages.size() == 2 && messages[0].at("status") == "interrupted";
      },
      6s);
  INFO("closed after " << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed).count()
                       << " ms");
  INFO("survivor's log: " << b.stderr_text());
  REQUIRE(closed);
  auto events = all_events(b.port(), sid);
  REQUIRE(events.size() >= 4);
  check_gap_free(events);
  const auto n = events.size();
  CHECK(events[n - 2].at("event") == "error");
  CHECK(events[n - 2].at("data").at("code") == "interrupted");
  CHECK(events[n - 1].at("event") == "done");
  int dones = 0, tokens = 0;
  for (const auto& e : events) {
    dones += e.at("event") == "done";
    tokens += e.at("event") == "token";
    CHECK(e.at("data").at("run_id") == jstr(run_id));
  }
  CHECK(dones == 1);
  CHECK(tokens >= 5);
  auto messages = get_messages(b.port(), sid);
  REQUIRE(messages.size() == 2);
  CHECK(messages[0].at("status") == "interrupted");

  // The SSE replay on the survivor shows the ending exactly once.
  auto replay = std::make_unique<sse_reader>(b.port());
  replay->send("GET", "/sessions/" + sid + "/events", "", {{"Last-Event-ID", "0"}});
  REQUIRE(replay->head.status == 200);
  REQUIRE(replay->read_until([&](const sse_parser& p) { return p.frames.size() >= n; }, 5s));
  std::this_thread::sleep_for(200ms);
  CHECK(replay->parser.count("done") == 1);
  CHECK(replay->parser.count("error") == 1);

  // A new run on the survivor numbers on, gap-free.
  auto next = run_message(b.port(), sid, "again");
  auto after = all_events(b.port(), sid);
  CHECK(after.size() > n);
  check_gap_free(after);
  CHECK(after.back().at("event") == "done");
}

TEST_CASE("cluster leases: an abort posted on the node that does not own the run stops it") {
  if (!on_postgres()) return;
  gateway_process a(node_env("node-a")), b(node_env("node-b"));
  const std::string sid = create_mock_session(a.port(), R"({"tokens":200,"tokens_per_second":20})");
  auto live = start_message(a.port(), sid, "long answer");
  REQUIRE(live->head.status == 200);
  const std::string run_id = live->head.header("X-Run-Id");
  REQUIRE(live->read_until([](const sse_parser& p) { return p.count("token") >= 2; }, 10s));
  auto aborting = http_call(b.port(), "POST", "/sessions/" + sid + "/abort", "", {});
  INFO("abort: " << aborting.body);
  CHECK(aborting.status == 200);
  CHECK(aborting.json().at("status") == "aborting");
  CHECK(aborting.json().at("run_id") == jstr(run_id));
  // The owner sees it at its next renewal (lease / 3).
  REQUIRE(live->read_to_end(5s));
  CHECK(live->parser.count("done") == 1);
  bool aborted_status = false;
  for (const auto& f : live->parser.frames)
    aborted_status = aborted_status || (f.event == "status" && f.raw.find("aborted") != std::string::npos);
  CHECK(aborted_status);
  CHECK(get_messages(a.port(), sid)[0].at("status") == "aborted");
}
