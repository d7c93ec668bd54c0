// GET /metrics on the real binary: the families move as a run, a resume, a
// follower and a webhook say they should, and a real scrape passes
// `promtool check metrics` (Debian's prometheus package; scripts/setup.sh).
#include <doctest/doctest.h>

#include <boost/json/serialize.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"
#include "tests/support/webhook_receiver.hpp"

using namespace agw::test;
using namespace agw::test::runs;
using namespace std::chrono_literals;

namespace {

std::string scrape(std::uint16_t port) {
  auto r = http_call(port, "GET", "/metrics", {}, {});
  REQUIRE(r.status == 200);
  CHECK(r.header("Content-Type").starts_with("text/plain; version=0.0.4"));
  return r.body;
}

// The value of the sample `series` (a name with its labels exactly as printed, e.g.
// `x_total{type="token"}`), or -1 when the scrape has no such line.
double sample(const std::string& text, std::string_view series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with('#')) continue;
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 && line[series.size()] == ' ')
      return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

double sample_at(std::uint16_t port, std::string_view series) { return sample(scrape(port), series); }

bool eventually_at_least(std::uint16_t port, std::string_view series, double value) {
  for (int i = 0; i < 200; ++i) {
    if (sample_at(port, series) >= value) return true;
    std::this_thread::sleep_for(25ms);
  }
  return false;
}

}  // namespace

TEST_CASE("metrics: a run, a follower's resume and a webhook move their families") {
  webhook_receiver receiver;
  // Fast heartbeats: a follower that left is noticed at the next write.
  gateway_process gw({{"GATEWAY_WEBHOOK_ALLOW_PRIVATE", "1"}, {"GATEWAY_SSE_HEARTBEAT_INTERVAL", "0.1"}});
  const auto port = gw.port();
  const auto before = scrape(port);
  CHECK(sample(before, R"(gateway_events_by_type_total{type="token"})") == 0);
  CHECK(sample(before, "gateway_event_commit_wait_seconds_count") == 0);
  CHECK(sample(before, "gateway_subscribers") == 0);
  CHECK(sample(before, "process_resident_memory_bytes") > 1e6);
  CHECK(sample(before, "process_open_fds") > 3);
  CHECK(sample(before, "process_cpu_seconds_total") >= 0);

  auto sid = create_mock_session(port, R"({"tokens":5})");
  const std::string body = boost::json::serialize(boost::json::object{{"content", "hi"}, {"callback_url", receiver.url()}});
  auto run = std::make_unique<sse_reader>(port);
  run->send("POST", messages_path(sid), body, json_headers);
  REQUIRE(run->head.status == 200);
  REQUIRE(run->read_to_end());
  REQUIRE(receiver.wait_for(1, 10s));

  // A follower resuming after event 2 (from the ring, or from the log once the idle session's
  // ring was let go): a subscriber while open, catching up until it has the last event.
  auto follower = std::make_unique<sse_reader>(port);
  follower->send("GET", "/sessions/" + sid + "/events", {}, {{"Last-Event-ID", "2"}});
  REQUIRE(follower->head.status == 200);
  REQUIRE(follower->read_until([](const sse_parser& p) { return !p.frames.empty() && p.frames.back().event == "done"; }));
  const auto during = scrape(port);
  CHECK(sample(during, "gateway_subscribers") >= 1);
  CHECK(sample(during, R"(gateway_replay_reads_total{source="ring"})") +
            sample(during, R"(gateway_replay_reads_total{source="log"})") >=
        1);
  CHECK(sample(during, R"(gateway_events_by_type_total{type="token"})") == 5);
  CHECK(sample(during, R"(gateway_events_by_type_total{type="done"})") == 1);
  CHECK(sample(during, R"(gateway_events_by_type_total{type="status"})") >= 1);
  CHECK(sample(during, "gateway_runs_started_total") == 1);
  // The run counts as ended once its done has reached the subscribers, not before.
  CHECK(eventually([&] { return sample(scrape(port), "gateway_runs_live") == 0; }));
  CHECK(sample(during, R"(gateway_http_requests_by_route_total{method="POST",route="/sessions",status="201"})") == 1);
  CHECK(sample(during, R"(gateway_http_requests_by_route_total{method="POST",route="/sessions/{id}/messages",status="200"})") ==
        1);
  // A stream's request is counted once its handler handed the stream over, which may be a
  // moment after the client already read from it.
  const std::string follow_series =
      R"(gateway_http_requests_by_route_total{method="GET",route="/sessions/{id}/events",status="200"})";
  CHECK(eventually_at_least(port, follow_series, 1));
  CHECK(sample_at(port, follow_series) == 1);
  CHECK(sample_at(port, "gateway_http_request_duration_seconds_count") >= 4);
  CHECK(sample(during, "gateway_store_commit_duration_seconds_count") >= 1);
  CHECK(sample(during, R"(gateway_store_commit_duration_seconds_bucket{le="+Inf"})") ==
        sample(during, "gateway_store_commit_duration_seconds_count"));
  CHECK(sample(during, "gateway_store_queue_depth") >= 0);
  // One observation per committed event batch.
  const double waits = sample(during, "gateway_event_commit_wait_seconds_count");
  CHECK(waits >= 1);
  CHECK(waits == sample(during, "gateway_event_batches_committed_total"));
  CHECK(sample(during, R"(gateway_event_commit_wait_seconds_bucket{le="+Inf"})") == waits);
  CHECK(sample(during, "gateway_event_commit_wait_seconds_sum") > 0);

  // Level with the log once its replay drained (the step after the last page is asynchronous).
  bool level = false;
  for (int i = 0; i < 200 && !level; ++i) {
    level = sample_at(port, "gateway_subscribers_catching_up") == 0;
    if (!level) std::this_thread::sleep_for(25ms);
  }
  CHECK(level);
  CHECK(sample_at(port, "gateway_subscribers") == 1);

  // The webhook's outcome is recorded after the receiver answered.
  CHECK(eventually_at_least(port, R"(gateway_webhook_attempts_total{outcome="delivered"})", 1));
  const auto after = scrape(port);
  CHECK(sample(after, "gateway_webhook_attempt_duration_seconds_count") == 1);
  CHECK(sample(after, R"(gateway_webhook_attempts_total{outcome="retry"})") == 0);

  // A 404 counts under the unmatched route; the follower leaving takes it off the gauge.
  CHECK(http_call(port, "GET", "/nowhere").status == 404);
  follower.reset();
  bool left = false;
  for (int i = 0; i < 200 && !left; ++i) {
    left = sample_at(port, "gateway_subscribers") == 0;
    if (!left) std::this_thread::sleep_for(25ms);
  }
  CHECK(left);
  CHECK(sample_at(port, R"(gateway_http_requests_by_route_total{method="any",route="unmatched",status="404"})") == 1);
  CHECK(sample_at(port, "gateway_upstream_time_to_first_token_seconds_count") == 0);  // registered, fed by the openai provider
}

TEST_CASE("metrics: promtool check metrics passes on a real scrape") {
  REQUIRE_MESSAGE(std::system("command -v promtool >/dev/null 2>&1") == 0,
                  "promtool is missing: scripts/setup.sh installs Debian's prometheus package");
  gateway_process gw;
  auto sid = create_mock_session(gw.port(), R"({"tokens":3})");
  run_message(gw.port(), sid, "hello");
  CHECK(http_call(gw.port(), "GET", "/nowhere").status == 404);
  temp_dir dir;
  const auto path = (dir.path() / "scrape.txt").string();
  std::ofstream(path) << scrape(gw.port());
  const std::string command = "promtool check metrics < " + path + " > " + path + ".out 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream out(path + ".out");
  const std::string report((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  INFO("promtool says: " << report);
  CHECK(status == 0);
  CHECK(report.empty());
}

TEST_CASE("metrics: a resume during a live run is counted as served from the ring") {
  gateway_process gw;
  const auto port = gw.port();
  auto sid = create_mock_session(port, R"({"tokens":40,"tokens_per_second":40})");
  auto run = start_message(port, sid, "slow");
  REQUIRE(run->head.status == 200);
  REQUIRE(run->read_until([](const sse_parser& p) { return p.frames.size() >= 5; }));
  auto live = std::make_unique<sse_reader>(port);
  live->send("GET", "/sessions/" + sid + "/events", {}, {{"Last-Event-ID", "2"}});
  REQUIRE(live->head.status == 200);
  REQUIRE(live->read_until([](const sse_parser& p) { return p.frames.size() >= 4; }));
  const auto during = scrape(port);
  CHECK(sample(during, R"(gateway_replay_reads_total{source="ring"})") >= 1);
  CHECK(sample(during, R"(gateway_replay_reads_total{source="log"})") == 0);
  REQUIRE(run->read_to_end());
}
