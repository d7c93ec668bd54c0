// Human handover on the real binary (docs/timeline.md): in manual mode a customer's
// messages are stored and streamed as `message` events and the agent is never run;
// an operator's message reaches an EventSource-style follower as tokens then done;
// back in auto mode the agent answers with the whole conversation, human turns included.
#include <doctest/doctest.h>

#include <string>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/resume_support.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::resume;
using agw::test::runs::jstr;
using agw::test::runs::str;
using namespace std::chrono_literals;

TEST_CASE("timeline: a manual-mode session never runs the agent; the operator's message streams like an answer") {
  gateway_process gw;
  const std::string sid = runs::create_mock_session(gw.port(), R"({"tokens_per_second":1000})");
  auto patched = http_call(gw.port(), "PATCH", "/sessions/" + sid, R"({"mode":"manual"})");
  REQUIRE(patched.status == 200);
  CHECK(patched.json().at("mode") == "manual");

  auto follower = open_events(gw.port(), sid, 0);  // as an EventSource does
  REQUIRE(follower->head.status == 200);
  auto held = http_call(gw.port(), "POST", runs::messages_path(sid), runs::message_body("I need a human please"));
  INFO(held.body);
  REQUIRE(held.status == 202);
  CHECK(held.json().at("status") == "stored");
  const std::string message_id = str(held.json().at("message_id"));
  REQUIRE(follower->read_until([](const sse_parser& p) { return p.count("message") >= 1; }, 10s));
  const auto* shown = follower->parser.of_type("message")[0];
  CHECK(shown->field("source") == "customer");
  CHECK(shown->obj().at("message").at("id") == jstr(message_id));
  CHECK(shown->obj().at("message").at("content") == "I need a human please");
  // A second one, still no run.
  REQUIRE(http_call(gw.port(), "POST", runs::messages_path(sid), runs::message_body("hello?")).status == 202);

  auto answered = http_call(gw.port(), "POST", "/sessions/" + sid + "/operator-messages",
                            R"({"content":"Hi, I am Ana from support.","source":"human_agent","stream":true})");
  INFO(answered.body);
  REQUIRE(answered.status == 201);
  const std::string op_run = str(answered.json().at("run_id"));
  CHECK(answered.json().at("message").at("source") == "human_agent");
  REQUIRE(follower->read_until([](const sse_parser& p) { return p.count("done") >= 1; }, 10s));
  std::string streamed;
  for (const auto* t : follower->parser.of_type("token")) {
    CHECK(t->field("source") == "human_agent");
    CHECK(t->field("run_id") == op_run);
    streamed += t->field("content");
  }
  CHECK(streamed == "Hi, I am Ana from support.");
  const auto* done = follower->parser.of_type("done")[0];
  CHECK(done->obj().at("assistant_data").at("content") == "Hi, I am Ana from support.");
  CHECK(done->obj().at("assistant_data").at("source") == "human_agent");
  // Not streamed: one `message` event on behalf of the agent.
  REQUIRE(http_call(gw.port(), "POST", "/sessions/" + sid + "/operator-messages",
                    R"({"content":"One moment.","source":"human_agent_on_behalf_of_ai_agent"})")
              .status == 201);
  REQUIRE(follower->read_until([](const sse_parser& p) { return p.count("message") >= 3; }, 10s));
  CHECK(follower->parser.of_type("message")[2]->field("source") == "human_agent_on_behalf_of_ai_agent");
  CHECK(metric(gw.port(), "gateway_runs_started_total") == 0);  // the agent was never called

  // Back to auto: the agent answers the next message, seeing every turn so far.
  REQUIRE(http_call(gw.port(), "PATCH", "/sessions/" + sid, R"({"mode":"auto"})").status == 200);
  auto run = runs::run_message(gw.port(), sid, "thanks bye");
  CHECK(metric(gw.port(), "gateway_runs_started_total") == 1);
  const auto usage = run->parser.of_type("usage").back();
  // I need a human please (5) + hello? (1) + Hi, I am Ana from support. (6) + One moment. (2) + thanks bye (2)
  CHECK(usage->obj().at("input_tokens") == 16);
  auto messages = runs::get_messages(gw.port(), sid);  // newest first
  REQUIRE(messages.size() == 6);
  CHECK(messages[0].at("source") == "ai_agent");
  CHECK(messages[1].at("source") == "customer");
  CHECK(messages[2].at("source") == "human_agent_on_behalf_of_ai_agent");
  CHECK(messages[3].at("source") == "human_agent");
  CHECK(messages[3].at("role") == "assistant");
  CHECK(messages[5].at("content") == "I need a human please");
}
