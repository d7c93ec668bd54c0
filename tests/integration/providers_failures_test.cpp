// Upstream failures end the run with the contract's code and the upstream's own
// message, keep what was streamed, leave the session usable; retries happen only
// before the first token; an abort hangs up on the upstream at once.
#include <doctest/doctest.h>

#include "tests/integration/providers_support.hpp"

using namespace agw::test;
using namespace agw::test::providers;

TEST_CASE("providers: each upstream failure has its code and message, then done with status error") {
  fake_upstream_process fake;
  gateway_process gw(openai_env(fake, {{"GATEWAY_OPENAI_IDLE_TIMEOUT", "0.5"}}));
  struct row {
    std::string model;
    std::string code;
    std::string message_part;
    std::string partial;  // content persisted
  };
  const std::vector<row> table{
      {"status:code=401", "upstream_auth", "fake says 401", ""},
      {"status:code=403", "upstream_auth", "fake says 403", ""},
      {"status:code=404", "upstream_error", "fake says 404", ""},
      {"status:code=429,retry_after=0", "upstream_rate_limited", "fake says 429", ""},
      {"status:code=503,retry_after=0", "upstream_error", "fake says 503", ""},
      {"midstream_error", "upstream_error", "the model crashed", "tok0 tok1"},
      {"garbage", "upstream_protocol", "not a JSON", "tok0"},
      {"cut:n=2", "upstream_incomplete", "before it was complete", "tok0 tok1"},
      {"tokens:n=2,finish=0,done=0", "upstream_incomplete", "without [DONE]", "tok0 tok1"},
      {"stall:ms=5000", "upstream_timeout", "idle timeout", "tok0"},
  };
  for (const auto& t : table) {
    CAPTURE(t.model);
    const auto sid = openai_session(gw.port(), t.model);
    auto r = runs::run_message(gw.port(), sid, "hi");
    CHECK(error_code_of(*r) == t.code);
    CHECK(r->parser.last("error")->field("message").find(t.message_part) != std::string::npos);
    const auto& answer = r->parser.last("done")->obj().at("assistant_data");
    CHECK(answer.at("status") == "error");
    CHECK(answer.at("content") == boost::json::value(t.partial));
  }
  // Retried: 429 and 503 three times each (the first try and two retries), the rest once.
  CHECK(upstream_requests(fake).size() == 1 + 1 + 1 + 3 + 3 + 1 + 1 + 1 + 1 + 1);
}

TEST_CASE("providers: a refused connection is upstream_unavailable and the session stays usable") {
  std::uint16_t closed_port = 0;
  {
    fake_upstream_process gone;
    closed_port = gone.port();
  }
  fake_upstream_process fake;
  auto env = openai_env(fake, {{"GATEWAY_OPENAI_BASE_URL", "http://127.0.0.1:" + std::to_string(closed_port) + "/v1"},
                               {"GATEWAY_OPENAI_MAX_RETRIES", "1"}});
  gateway_process gw(env);
  const auto sid = openai_session(gw.port(), "tokens:n=2");
  auto r = runs::run_message(gw.port(), sid, "hi");
  CHECK(error_code_of(*r) == "upstream_unavailable");
  CHECK(runs::get_session(gw.port(), sid).at("status") == "active");
  CHECK(runs::run_message(gw.port(), sid, "again")->parser.count("done") == 1);
}

TEST_CASE("providers: a 429 then success is retried after Retry-After, before any token") {
  fake_upstream_process fake;
  gateway_process gw(openai_env(fake));
  const auto sid = openai_session(gw.port(), "status:code=429,retry_after=0.3,fail_times=1,n=2");
  const auto started = std::chrono::steady_clock::now();
  auto r = runs::run_message(gw.port(), sid, "hi");
  CHECK(std::chrono::steady_clock::now() - started >= 300ms);
  CHECK(r->parser.tokens() == "tok0 tok1");
  CHECK(r->parser.count("error") == 0);
  CHECK(upstream_requests(fake).size() == 2);
}

TEST_CASE("providers: abort mid-stream closes the upstream connection within 100 ms") {
  fake_upstream_process fake;
  gateway_process gw(openai_env(fake));
  const auto sid = openai_session(gw.port(), "tokens:n=200,rate=20");
  auto live = runs::start_message(gw.port(), sid, "go on");
  REQUIRE(live->read_until([](const runs::sse_parser& p) { return p.count("token") >= 2; }, 5s));
  const auto aborted_at = std::chrono::steady_clock::now();
  auto reply = http_call(gw.port(), "POST", "/sessions/" + sid + "/abort", "", {});
  CHECK(reply.status / 100 == 2);
  REQUIRE(runs::eventually([&] { return !journal(fake).at("ends").as_array().empty(); }, 5s));
  const auto log = journal(fake);
  const auto& end = log.at("ends").as_array()[0];
  CHECK(end.at("kind") == "disconnect");
  const auto seen_ns = end.at("at_ns").to_number<long long>() -
                       std::chrono::duration_cast<std::chrono::nanoseconds>(aborted_at.time_since_epoch()).count();
  INFO("the fake saw the hang-up " << seen_ns / 1000 << " us after the abort was sent");
  CHECK(seen_ns < 100'000'000);
  REQUIRE(live->read_to_end(5s));
  CHECK(live->parser.last("done")->obj().at("assistant_data").at("status") == "aborted");
}
