// The context window and the variables on the openai provider (docs/sessions.md): what
// the upstream receives, as the fake upstream recorded it.
#include <doctest/doctest.h>

#include "tests/integration/providers_support.hpp"

using namespace agw::test;
using namespace agw::test::providers;

TEST_CASE("session context: config.context bounds what the provider is sent; variables join the system prompt") {
  fake_upstream_process fake;
  gateway_process gw(openai_env(fake));
  const auto sid =
      runs::create_session(gw.port(), R"({"config":{"provider":"openai","model":"tokens:n=1","context":{"max_events":2}},)"
                                      R"("variables":{"tier":"gold"},"metadata":{"crm":"never-sent"}})");
  runs::run_message(gw.port(), sid, "first question");
  runs::run_message(gw.port(), sid, "second question");
  runs::run_message(gw.port(), sid, "third question");
  auto requests = upstream_requests(fake);
  REQUIRE(requests.size() == 3);
  const auto& sent = messages_sent(requests[2]);
  // The system prompt (variables only: no profile), the first user message (always kept),
  // then the newest two messages; the middle of the conversation is left out.
  REQUIRE(sent.size() == 4);
  CHECK(sent[0].at("role") == "system");
  CHECK(sent[0].at("content") == "Session variables:\n- tier: gold");
  CHECK(sent[1].at("content") == "first question");
  CHECK(sent[2].at("role") == "assistant");
  CHECK(sent[3].at("content") == "third question");
  CHECK(boost::json::serialize(requests[2]).find("never-sent") == std::string::npos);
  // The stored conversation stays whole.
  CHECK(runs::get_session(gw.port(), sid).at("message_count") == 6);
}
