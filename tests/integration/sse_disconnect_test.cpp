// A stream never reads its socket for data, but it watches it: a client that closes a
// quiet stream is let go at once (its subscription and gauge with it), not at the next
// heartbeat that fails. Bytes a client sends behind a run's stream are not taken for a
// close: they wait for the stream's end and are answered on the same connection.
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
