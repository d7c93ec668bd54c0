// The openai provider against the fake upstream: tokens as they arrive, the
// request it sends, reasoning, usage, continuity across runs and a restart.
#include <doctest/doctest.h>

#include "tests/integration/providers_support.hpp"

using namespace agw::test;
using namespace agw::test::providers;

TEST_CASE("providers: tokens reach the client while the upstream is still streaming; the request is the API's") {
  fake_upstream_process fake;
  gateway_process gw(openai_env(fake));
  const auto sid = openai_session(gw.port(), "tokens:n=6,rate=5");
  auto live = runs::start_message(gw.port(), sid, "hello there");
  REQUIRE(live->head.status == 200);
  REQUIRE(live->read_until([](const runs::sse_parser& p) { return p.count("token") >= 1; }, 5s));
  // The fake needs ~1.2 s for six tokens: it has not finished when the first one is here.
  CHECK(journal(fake).at("ends").as_array().empty());
  REQUIRE(live->read_to_end(10s));
  CHECK(live->parser.tokens() == "tok0 tok1 tok2 tok3 tok4 tok5");
  CHECK(journal(fake).at("ends").as_array().size() == 1);

  const auto* usage = live->parser.last("usage");
  REQUIRE(usage);
  CHECK(usage->obj().at("input_tokens") == 10);  // the fake counts 7 per message + 3
  CHECK(usage->obj().at("output_tokens") == 6);
  CHECK(usage->field("provider") == "openai");
  CHECK(usage->field("model") == "tokens:n=6,rate=5");
  CHECK(live->parser.last("done")->obj().at("assistant_data").at("content") == "tok0 tok1 tok2 tok3 tok4 tok5");

  const auto requests = upstream_requests(fake);
  REQUIRE(requests.size() == 1);
  const auto& body = requests[0].at("body").as_object();
  CHECK(body.at("stream") == true);
  CHECK(body.at("stream_options").at("include_usage") == true);
  CHECK(requests[0].at("authorization") == "Bearer sk-test-secret");
  REQUIRE(messages_sent(requests[0]).size() == 1);
  CHECK(messages_sent(requests[0])[0].at("role") == "user");
  CHECK(messages_sent(requests[0])[0].at("content") == "hello there");
  CHECK(body.at("tools").as_array().size() >= 2);
  // The key never reaches the log.
  CHECK(gw.stderr_text().find("sk-test-secret") == std::string::npos);
}

TEST_CASE("providers: reasoning deltas (both spellings) become reasoning events, not content") {
  fake_upstream_process fake;
  gateway_process gw(openai_env(fake));
  const auto sid = openai_session(gw.port(), "reasoning");
  auto r = runs::run_message(gw.port(), sid, "think");
  const auto reasoning = r->parser.of_type("reasoning");
  REQUIRE(reasoning.size() == 2);
  CHECK(reasoning[0]->field("content") == "Let me think");
  CHECK(reasoning[1]->field("content") == " about it.");
  CHECK(r->parser.tokens() == "tok0 tok1");
  CHECK(r->parser.last("done")->obj().at("assistant_data").at("content") == "tok0 tok1");
}

TEST_CASE("providers: keep-alive comments, CRLF, and a stream that ends after finish_reason without [DONE]") {
  fake_upstream_process fake;
  gateway_process gw(openai_env(fake));
  for (const std::string model : {"tokens:n=3,keepalive,crlf", "tokens:n=3,done=0", "tokens:n=3,done=0,usage=0"}) {
    CAPTURE(model);
    auto r = runs::run_message(gw.port(), openai_session(gw.port(), model), "hi");
    CHECK(r->parser.tokens() == "tok0 tok1 tok2");
    CHECK(r->parser.count("error") == 0);
    CHECK(r->parser.last("done")->obj().at("assistant_data").at("status") == "complete");
  }
}

TEST_CASE("providers: the next run, and a run after a restart, send the whole conversation upstream") {
  fake_upstream_process fake;
  gateway_process gw(openai_env(fake));
  const auto sid = openai_session(gw.port(), "tokens:n=2");
  runs::run_message(gw.port(), sid, "first question");
  runs::run_message(gw.port(), sid, "second question");
  auto requests = upstream_requests(fake);
  REQUIRE(requests.size() == 2);
  const auto& second = messages_sent(requests[1]);
  REQUIRE(second.size() == 3);
  CHECK(second[0].at("content") == "first question");
  CHECK(second[1].at("role") == "assistant");
  CHECK(second[1].at("content") == "tok0 tok1");
  CHECK(second[2].at("content") == "second question");

  gw.terminate();
  gw.start();
  runs::run_message(gw.port(), sid, "after restart");
  requests = upstream_requests(fake);
  REQUIRE(requests.size() == 3);
  const auto& third = messages_sent(requests[2]);
  REQUIRE(third.size() == 5);
  CHECK(third[3].at("content") == "tok0 tok1");
  CHECK(third[4].at("content") == "after restart");
}
