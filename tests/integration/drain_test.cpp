// Graceful drain on the real binary (gateway/drain.hpp): after SIGTERM the listener
// keeps accepting, /readyz and new runs answer 503 with Retry-After, a live run
// finishes and is persisted, followers of its session get its events to its done and
// are then closed cleanly (never a 503 to GET /events), and the process exits 0. At
// the deadline a live run is aborted and persisted as such; a second signal exits at
// once with what was committed intact.
#include <doctest/doctest.h>
#include <signal.h>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"
#include "tests/support/webhook_receiver.hpp"

using namespace agw::test;
using namespace agw::test::runs;

namespace {

std::unique_ptr<sse_reader> follow(std::uint16_t port, const std::string& sid) {
  auto r = std::make_unique<sse_reader>(port);
  r->send("GET", "/sessions/" + sid + "/events", {}, {{"Accept", "text/event-stream"}});
  return r;
}

// The session's newest message (the run's answer).
boost::json::object newest_message(std::uint16_t port, const std::string& sid) {
  auto messages = get_messages(port, sid);
  REQUIRE(!messages.empty());
  return messages.front().as_object();
}

std::string body_with_callback(std::string_view content, const std::string& url) {
  return boost::json::serialize(boost::json::object{{"content", content}, {"callback_url", url}});
}

bool readyz_unavailable(std::uint16_t port) { return http_call(port, "GET", "/readyz", {}, {}).status == 503; }

}  // namespace

TEST_CASE("drain: a live run finishes, new runs and /readyz are 503 while connections are accepted, streams end, exit 0") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_DRAIN_TIMEOUT", "20"}});
  const std::string busy = create_mock_session(gw.port(), R"({"tokens":30,"tokens_per_second":20})");
  const std::string idle = create_session(gw.port());
  auto live = start_message(gw.port(), busy, "finish me");
  REQUIRE(live->head.status == 200);
  auto busy_follower = follow(gw.port(), busy);
  auto idle_follower = follow(gw.port(), idle);
  REQUIRE(busy_follower->head.status == 200);
  REQUIRE(idle_follower->head.status == 200);
  REQUIRE(live->read_until([](const sse_parser& p) { return p.count("token") >= 2; }, 5s));

  gw.signal(SIGTERM);
  // A new connection is accepted and told the instance is not ready.
  REQUIRE(eventually([&] { return readyz_unavailable(gw.port()); }, 3s));
  auto ready = http_call(gw.port(), "GET", "/readyz", {}, {});
  check_error(ready, 503, "unavailable");
  CHECK(!ready.header("Retry-After").empty());
  CHECK(http_call(gw.port(), "GET", "/healthz", {}, {}).status == 200);

  auto refused = http_call(gw.port(), "POST", messages_path(idle), message_body("too late"));
  check_error(refused, 503, "unavailable");
  CHECK(!refused.header("Retry-After").empty());

  // A subscription opened during the drain is a 200 stream (an EventSource would give
  // up on a 503) that is closed cleanly, as the idle one opened before it is.
  auto late_follower = follow(gw.port(), idle);
  CHECK(late_follower->head.status == 200);
  CHECK(late_follower->read_to_end(5s));
  CHECK(idle_follower->read_to_end(5s));

  // The live run goes on to its done, and so does the follower of its session.
  REQUIRE(live->read_to_end(15s));
  check_run_stream(*live, live->head.header("X-Run-Id"));
  CHECK(live->parser.count("token") == 30);
  CHECK(live->parser.frames.back().obj().at("assistant_data").at("status") == "complete");
  REQUIRE(busy_follower->read_to_end(5s));
  CHECK(busy_follower->parser.frames.back().event == "done");

  CHECK(gw.wait_exit(15s) == 0);
  INFO("log: " << gw.stderr_text());
  gw.start();
  auto answer = newest_message(gw.port(), busy);
  CHECK(answer.at("role") == "assistant");
  CHECK(answer.at("status") == "complete");
  CHECK(get_messages(gw.port(), idle).empty());  // the refused message was not stored
}

TEST_CASE("drain: at GATEWAY_DRAIN_TIMEOUT a live run is aborted, persisted as aborted, its done sent; exit 0") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_DRAIN_TIMEOUT", "1"}});
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":1000,"tokens_per_second":20})");
  auto live = start_message(gw.port(), sid, "too long");
  REQUIRE(live->head.status == 200);
  REQUIRE(live->read_until([](const sse_parser& p) { return p.count("token") >= 1; }, 5s));
  const auto signalled = clock_type::now();
  gw.signal(SIGTERM);
  REQUIRE(live->read_to_end(10s));
  const auto ended_after = clock_type::now() - signalled;
  check_run_stream(*live, live->head.header("X-Run-Id"));
  CHECK(live->parser.frames.back().obj().at("assistant_data").at("status") == "aborted");
  CHECK(ended_after >= 900ms);  // not before the deadline
  CHECK(live->parser.count("token") < 1000);
  CHECK(gw.wait_exit(10s) == 0);
  gw.start();
  auto answer = newest_message(gw.port(), sid);
  CHECK(answer.at("role") == "assistant");
  CHECK(answer.at("status") == "aborted");
}

TEST_CASE("drain: a second signal exits at once; what was committed is intact") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_DRAIN_TIMEOUT", "60"}});
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":1000,"tokens_per_second":20})");
  const std::string other = create_session(gw.port());
  auto live = start_message(gw.port(), sid, "interrupted");
  REQUIRE(live->head.status == 200);
  REQUIRE(live->read_until([](const sse_parser& p) { return p.count("token") >= 1; }, 5s));
  gw.signal(SIGTERM);
  REQUIRE(eventually([&] { return readyz_unavailable(gw.port()); }, 3s));
  const auto signalled = clock_type::now();
  gw.signal(SIGTERM);
  CHECK(gw.wait_exit(5s) == 0);
  CHECK(clock_type::now() - signalled < 3s);  // not the 60 s drain
  gw.start();
  CHECK(get_session(gw.port(), other).at("id") == jstr(other));
  auto messages = get_messages(gw.port(), sid);
  REQUIRE(!messages.empty());
  CHECK(messages.back().at("content") == "interrupted");  // the user message, committed before the run began
}

TEST_CASE("drain: a run ending during the drain has its callback attempted before the exit; a retry not yet due stays pending") {
  webhook_receiver receiver;
  receiver.script({receiver_reply::with_status(500)});  // the first attempt fails: a retry is scheduled in 30 s
  gateway_process gw(gateway_process::env_map{
      {"GATEWAY_WEBHOOK_ALLOW_PRIVATE", "1"}, {"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "30"}, {"GATEWAY_DRAIN_TIMEOUT", "10"}});
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":10,"tokens_per_second":10})");
  auto live = std::make_unique<sse_reader>(gw.port());
  live->send("POST", messages_path(sid), body_with_callback("call me back", receiver.url()), json_headers);
  REQUIRE(live->head.status == 200);
  REQUIRE(live->read_until([](const sse_parser& p) { return p.count("token") >= 1; }, 5s));
  CHECK(receiver.count() == 0);
  gw.signal(SIGTERM);
  REQUIRE(live->read_to_end(10s));
  CHECK(gw.wait_exit(15s) == 0);
  CHECK(receiver.count() == 1);  // attempted once within the drain, not again
  gw.start();
  auto deliveries = get_json(gw.port(), "/sessions/" + sid + "/webhooks").at("deliveries").as_array();
  REQUIRE(deliveries.size() == 1);
  CHECK(deliveries[0].at("status") == "pending");
  CHECK(deliveries[0].at("attempts").as_array().size() == 1);
  CHECK(receiver.count() == 1);
}
