// A stream never reads its socket for data, but it watches it: a client that closes a
// quiet stream is let go at once (its subscription and gauge with it), not at the next
// heartbeat that fails; one that closes while a write to it is stalled is let go at
// once too, not at the write timeout. Bytes a client sends behind a run's stream are not
// taken for a close: they wait for the stream's end and are answered on the same connection.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/resume_support.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::resume;
using namespace std::chrono_literals;

TEST_CASE("streams: a follower that closes a quiet stream is let go at once, not at a heartbeat") {
  // A minute between heartbeats: only the watch can notice the closes within the test.
  gateway_process gw(gateway_process::env_map{{"GATEWAY_SSE_HEARTBEAT_INTERVAL", "60"}});
  const auto port = gw.port();
  const std::string sid = runs::create_session(port);
  std::vector<std::unique_ptr<sse_reader>> followers;
  for (int i = 0; i < 5; ++i) {
    followers.push_back(open_events(port, sid));
    REQUIRE(followers.back()->head.status == 200);
  }
  REQUIRE(runs::eventually([&] { return metric(port, "gateway_sse_streams_open") == 5; }, 10s));
  REQUIRE(metric(port, "gateway_subscribers") == 5);

  for (int i = 0; i < 3; ++i) followers[static_cast<std::size_t>(i)]->disconnect();
  CHECK(runs::eventually(
      [&] { return metric(port, "gateway_sse_streams_open") == 2 && metric(port, "gateway_subscribers") == 2; }, 10s));

  // The two still open follow the next run whole.
  auto run = runs::run_message(port, sid, "still here");
  for (std::size_t i = 3; i < followers.size(); ++i) {
    CAPTURE(i);
    CHECK(followers[i]->read_until([](const sse_parser& p) { return p.has_done(); }, 20s));
    const auto& body = followers[i]->parser.body;
    CHECK(body.substr(body.find("id: ")) == run->parser.body.substr(run->parser.body.find("id: ")));
  }
}

TEST_CASE("streams: a follower that leaves while a write to it is stalled is let go at once, not at the write timeout") {
  // A minute of write timeout and of heartbeat: only the failed write (or the watch) can
  // notice this close within the test.
  gateway_process gw(gateway_process::env_map{
      {"GATEWAY_SSE_SUBSCRIBER_QUEUE", "1024"}, {"GATEWAY_WRITE_TIMEOUT", "60"}, {"GATEWAY_SSE_HEARTBEAT_INTERVAL", "60"}});
  const auto port = gw.port();
  const std::string sid = runs::create_mock_session(port, R"({"tokens":6000,"tokens_per_second":2000})");
  // A small window that it never reads: its socket fills, and the server's write to it waits.
  auto stalled = open_events(port, sid, std::nullopt, cursor_via::header, /*receive_buffer=*/2048);
  REQUIRE(stalled->head.status == 200);
  const double dropped_before = metric(port, "gateway_sse_slow_subscribers_dropped_total");
  auto fast = open_events(port, sid);
  REQUIRE(fast->head.status == 200);
  auto run = runs::run_message(port, sid, "go");
  REQUIRE(run->parser.has_done());
  REQUIRE(fast->read_until([](const sse_parser& p) { return p.has_done(); }, 20s));
  // The run is over, and the stalled follower is still far behind it: a write to it is
  // waiting on its full socket, and the rest of the run waits for the log. Open: it and
  // the fast follower (the POST's stream is counted closed just after its last chunk,
  // which the client may have read already).
  REQUIRE(runs::eventually([&] { return metric(port, "gateway_sse_streams_open") == 2; }, 10s));
  REQUIRE(metric(port, "gateway_subscribers_catching_up") == 1);

  stalled->disconnect();  // unread data: the close resets the connection
  CHECK(runs::eventually(
      [&] { return metric(port, "gateway_sse_streams_open") == 1 && metric(port, "gateway_subscribers") == 1; }, 10s));
  CHECK(metric(port, "gateway_subscribers_catching_up") == 0);
  // Let go for leaving, not cut as a slow subscriber.
  CHECK(metric(port, "gateway_sse_slow_subscribers_dropped_total") == dropped_before);

  // The fast follower, still subscribed, follows the next run whole.
  auto next = runs::run_message(port, sid, "still here");
  REQUIRE(next->parser.has_done());
  auto dones = [](const sse_parser& p) {
    int n = 0;
    for (const auto& f : p.frames) n += f.event == "done";
    return n;
  };
  CHECK(fast->read_until([&](const sse_parser& p) { return dones(p) == 2; }, 20s));
}

TEST_CASE("streams: a request pipelined behind a run's stream waits for its end and is answered then") {
  gateway_process gw;
  const auto port = gw.port();
  // Five tokens at 20 a second: the request below arrives while the run streams.
  const std::string sid = runs::create_mock_session(port, R"({"tokens_per_second":20})");
  auto post = runs::start_message(port, sid, "one two three four five");
  REQUIRE(post->head.status == 200);
  post->client().send_raw("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");

  REQUIRE(post->read_to_end(20s));
  int tokens = 0;
  for (const auto& f : post->parser.frames) tokens += f.event == "token";
  CHECK(tokens == 5);
  CHECK(post->parser.has_done());

  // After the last chunk, on the same connection: the pipelined request's answer.
  const auto last_chunk = post->raw.find("\r\n0\r\n\r\n");
  REQUIRE(last_chunk != std::string::npos);
  std::string after = post->raw.substr(last_chunk + 7);
  const auto deadline = clock_type::now() + 10s;
  while (after.find("\r\n\r\n") == std::string::npos && clock_type::now() < deadline) after += post->client().read_some(200ms);
  INFO("after the stream: " << after);
  CHECK(after.starts_with("HTTP/1.1 200 OK\r\n"));
}
