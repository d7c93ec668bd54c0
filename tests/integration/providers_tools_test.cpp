// The openai provider's tool loop against the fake upstream: calls split across
// chunks in every style real servers use, run through the tool registry, their
// results fed back, and the step limit.
#include <doctest/doctest.h>

#include "tests/integration/providers_support.hpp"

using namespace agw::test;
using namespace agw::test::providers;

TEST_CASE("providers: parallel tool calls split across chunks are run and their results sent back") {
  fake_upstream_process fake;
  gateway_process gw(openai_env(fake));
  // split: arguments cut mid-way, calls interleaved, 7-byte pieces; split_ids: the ids and
  // names cut too; ollama: index 0 repeated with new ids; noindex: no index and no ids
  // (llama.cpp); finish_stop: tool calls with finish_reason "stop".
  for (const std::string style : {"split", "split_ids", "ollama", "noindex", "split,finish_stop"}) {
    CAPTURE(style);
    const auto before = upstream_requests(fake).size();
    const auto sid = openai_session(gw.port(), "tools:style=" + style);
    auto r = runs::run_message(gw.port(), sid, "what is 2+3*4, and the time?");
    const auto calls = r->parser.of_type("tool_call");
    REQUIRE(calls.size() == 2);
    CHECK(calls[0]->field("name") == "calculator");
    CHECK(calls[0]->obj().at("args").at("expression") == "2+3*4");
    CHECK(calls[1]->field("name") == "current_time");
    CHECK(calls[0]->field("id") != calls[1]->field("id"));
    const auto results = r->parser.of_type("tool_result");
    REQUIRE(results.size() == 2);
    CHECK(results[0]->field("output") == "14");
    CHECK(results[0]->field("tool_call_id") == calls[0]->field("id"));
    CHECK(r->parser.tokens().starts_with("results: 14, "));
    CHECK(r->parser.count("error") == 0);

    // The second request carries the assistant's calls and one tool message per result.
    const auto requests = upstream_requests(fake);
    REQUIRE(requests.size() == before + 2);
    const auto& sent = messages_sent(requests.back());
    REQUIRE(sent.size() == 4);
    CHECK(sent[1].at("role") == "assistant");
    const auto& tool_calls = sent[1].at("tool_calls").as_array();
    REQUIRE(tool_calls.size() == 2);
    CHECK(tool_calls[0].at("function").at("name") == "calculator");
    CHECK(tool_calls[0].at("function").at("arguments") == R"({"expression":"2+3*4"})");
    CHECK(tool_calls[0].at("id") == boost::json::value(calls[0]->field("id")));
    CHECK(sent[2].at("role") == "tool");
    CHECK(sent[2].at("tool_call_id") == boost::json::value(calls[0]->field("id")));
    CHECK(sent[2].at("content") == "14");
    CHECK(sent[3].at("tool_call_id") == boost::json::value(calls[1]->field("id")));
  }
}

TEST_CASE("providers: a model that keeps calling tools stops at the step limit with tool_step_limit") {
  fake_upstream_process fake;
  gateway_process gw(openai_env(fake, {{"GATEWAY_OPENAI_MAX_STEPS", "2"}}));
  const auto sid = openai_session(gw.port(), "loop");
  auto r = runs::run_message(gw.port(), sid, "loop forever");
  CHECK(error_code_of(*r) == "tool_step_limit");
  CHECK(r->parser.count("tool_call") == 4);  // two rounds of two calls
  CHECK(upstream_requests(fake).size() == 3);
  CHECK(r->parser.last("done")->obj().at("assistant_data").at("status") == "error");
  // The session is still usable.
  http_call(gw.port(), "PATCH", "/sessions/" + sid, R"({"config":{"provider":"openai","model":"tokens:n=1"}})");
  CHECK(runs::run_message(gw.port(), sid, "ok now")->parser.tokens() == "tok0");
}
