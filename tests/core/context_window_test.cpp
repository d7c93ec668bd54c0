#include "core/context_window.hpp"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <string>

#include "core/api_error.hpp"

namespace {

using agw::core::api_error;
using agw::core::bound_conversation;
using agw::core::context_window;
using agw::core::message_record;
using agw::core::parse_context_window;

message_record msg(std::string role, std::string content, std::int64_t at_ms) {
  message_record m;
  m.role = std::move(role);
  m.content = std::move(content);
  m.created_at_ms = at_ms;
  return m;
}

message_record tool_call(std::string id_a, std::string id_b, std::int64_t at_ms) {
  auto m = msg("assistant", "", at_ms);
  m.tool_calls.push_back(boost::json::object{{"id", id_a}, {"name", "calculator"}});
  if (!id_b.empty()) m.tool_calls.push_back(boost::json::object{{"id", id_b}, {"name", "calculator"}});
  return m;
}

message_record tool_result(std::string id, std::int64_t at_ms) {
  auto m = msg("tool", "42", at_ms);
  m.tool_call_id = std::move(id);
  return m;
}

std::string contents(const std::vector<message_record>& ms) {
  std::string out;
  for (const auto& m : ms)
    out += (out.empty() ? "" : ",") + (m.role == "tool" ? "tool:" + *m.tool_call_id : m.content.empty() ? m.role : m.content);
  return out;
}

context_window events(std::int64_t n) { return context_window{n, std::nullopt}; }

// u1 a1 u2 a2 u3 (tool call c1,c2 + 2 results) a3 u4
std::vector<message_record> conversation() {
  return {msg("user", "u1", 1000),      msg("assistant", "a1", 2000), msg("user", "u2", 3000), msg("assistant", "a2", 4000),
          msg("user", "u3", 5000),      tool_call("c1", "c2", 6000),  tool_result("c1", 6100), tool_result("c2", 6200),
          msg("assistant", "a3", 7000), msg("user", "u4", 8000)};
}

}  // namespace

TEST_CASE("context window: unbounded keeps everything") {
  CHECK(contents(bound_conversation(conversation(), {}, 9000)) == contents(conversation()));
  CHECK(bound_conversation({}, events(3), 9000).empty());
}

TEST_CASE("context window: max_events keeps the newest messages and the first user message") {
  CHECK(contents(bound_conversation(conversation(), events(2), 9000)) == "u1,a3,u4");
  CHECK(contents(bound_conversation(conversation(), events(3), 9000)) == "u1,a3,u4");  // the tool unit (3) does not fit
  CHECK(contents(bound_conversation(conversation(), events(5), 9000)) == "u1,assistant,tool:c1,tool:c2,a3,u4");
  CHECK(contents(bound_conversation(conversation(), events(6), 9000)) == "u1,u3,assistant,tool:c1,tool:c2,a3,u4");
  // The first user message is never repeated when it is in the window anyway.
  CHECK(contents(bound_conversation(conversation(), events(100), 9000)) == contents(conversation()));
}

TEST_CASE("context window: a tool call and its results are never split") {
  // Mid tool round: the newest unit is the call with its results, kept whole even over the limit.
  auto c = conversation();
  c.resize(8);  // ... u3, call, result c1, result c2
  CHECK(contents(bound_conversation(c, events(1), 9000)) == "u1,assistant,tool:c1,tool:c2");
  CHECK(contents(bound_conversation(c, events(2), 9000)) == "u1,assistant,tool:c1,tool:c2");
  CHECK(contents(bound_conversation(c, events(4), 9000)) == "u1,u3,assistant,tool:c1,tool:c2");
  // No window ever starts with a tool result.
  for (std::int64_t n = 1; n <= 10; ++n) {
    auto w = bound_conversation(conversation(), events(n), 9000);
    REQUIRE(!w.empty());
    CHECK(w.front().role == "user");
    for (std::size_t i = 0; i < w.size(); ++i)
      if (w[i].role == "tool") CHECK((w[i - 1].role == "tool" || !w[i - 1].tool_calls.empty()));
  }
}

TEST_CASE("context window: max_age_seconds keeps the messages newer than the cut, whole units") {
  context_window recent{std::nullopt, 3};  // 3 s before now=9000 ms: created at >= 6000
  CHECK(contents(bound_conversation(conversation(), recent, 9000)) == "u1,assistant,tool:c1,tool:c2,a3,u4");
  // The unit's newest message decides: the call at 6000 is kept with results at 6100/6200 for a cut at 6050.
  CHECK(contents(bound_conversation(conversation(), recent, 9050)) == "u1,assistant,tool:c1,tool:c2,a3,u4");
  CHECK(contents(bound_conversation(conversation(), recent, 9300)) == "u1,a3,u4");
  // Everything old: the newest unit still goes.
  CHECK(contents(bound_conversation(conversation(), recent, 100000)) == "u1,u4");
  // Both limits: the tighter wins.
  context_window both{2, 100};
  CHECK(contents(bound_conversation(conversation(), both, 9000)) == "u1,a3,u4");
}

TEST_CASE("context window: config.context is parsed strictly") {
  auto parse = [](const char* text) { return parse_context_window(boost::json::parse(text).as_object()); };
  CHECK_FALSE(parse("{}").bounded());
  CHECK_FALSE(parse(R"({"context":null})").bounded());
  auto w = parse(R"({"context":{"max_events":10,"max_age_seconds":60}})");
  CHECK(*w.max_events == 10);
  CHECK(*w.max_age_seconds == 60);
  for (const char* bad : {R"({"context":5})", R"({"context":{"max_events":0}})", R"({"context":{"max_events":-1}})",
                          R"({"context":{"max_events":1.5}})", R"({"context":{"max_age_seconds":"60"}})",
                          R"({"context":{"max_turns":3}})", R"({"context":{"max_events":100001}})"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse(bad), api_error);
  }
}
