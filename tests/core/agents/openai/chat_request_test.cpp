#include "core/agents/openai/chat_request.hpp"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>

#include "core/tools/tool_registry.hpp"

using namespace agw::core;
using namespace agw::core::openai;

namespace {

message_record message(std::string role, std::string content) {
  message_record m;
  m.role = std::move(role);
  m.content = std::move(content);
  return m;
}

}  // namespace

TEST_CASE("chat_request: the conversation goes up as the API expects it, tool calls and results included") {
  conversation_state c;
  c.messages.push_back(message("user", "2+2?"));
  auto asked = message("assistant", "");
  asked.tool_calls.push_back(boost::json::object{{"id", "call_1"}, {"name", "calculator"}, {"args", {{"expression", "2+2"}}}});
  c.messages.push_back(asked);
  auto result = message("tool", "4");
  result.tool_call_id = "call_1";
  c.messages.push_back(result);
  c.messages.push_back(message("assistant", "It is 4."));
  c.messages.push_back(message("assistant", ""));  // a run aborted before its first token
  c.messages.push_back(message("user", "thanks"));

  const auto out = conversation_messages(c, "Be brief.");
  REQUIRE(out.size() == 6);
  CHECK(out[0] == boost::json::parse(R"({"role":"system","content":"Be brief."})"));
  CHECK(out[1] == boost::json::parse(R"({"role":"user","content":"2+2?"})"));
  CHECK(out[2] == boost::json::parse(R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
                                        "function":{"name":"calculator","arguments":"{\"expression\":\"2+2\"}"}}]})"));
  CHECK(out[3] == boost::json::parse(R"({"role":"tool","tool_call_id":"call_1","content":"4"})"));
  CHECK(out[4] == boost::json::parse(R"({"role":"assistant","content":"It is 4."})"));
  CHECK(out[5].at("content") == "thanks");
}

TEST_CASE("chat_request: the body streams with usage, declares the tools, and sets only what was given") {
  conversation_state c;
  c.messages.push_back(message("user", "hi"));
  auto tools = make_builtin_tools();
  chat_settings s{"m1", 0.25, 100, ""};
  auto body = boost::json::parse(chat_request_body(s, c, tools.all())).as_object();
  CHECK(body.at("model") == "m1");
  CHECK(body.at("stream") == true);
  CHECK(body.at("stream_options").at("include_usage") == true);
  CHECK(body.at("temperature").to_number<double>() == doctest::Approx(0.25));
  CHECK(body.at("max_tokens") == 100);
  REQUIRE(body.at("tools").as_array().size() == 2);
  CHECK(body.at("tools").as_array()[0].at("type") == "function");
  CHECK(body.at("tools").as_array()[0].at("function").at("name") == "calculator");
  CHECK(body.at("tools").as_array()[0].at("function").at("parameters").is_object());

  auto bare = boost::json::parse(chat_request_body({"m2", {}, {}, ""}, c, {})).as_object();
  CHECK_FALSE(bare.contains("temperature"));
  CHECK_FALSE(bare.contains("max_tokens"));
  CHECK_FALSE(bare.contains("tools"));
  CHECK(bare.at("messages").as_array().size() == 1);
}

TEST_CASE("chat_request: a client tool call left unanswered gets a placeholder result; client tools are declared last") {
  conversation_state c;
  c.messages.push_back(message("user", "ask me"));
  auto asked = message("assistant", "");
  asked.tool_calls.push_back(boost::json::object{{"id", "c1"}, {"name", "confirm"}, {"args", boost::json::object{}}});
  asked.tool_calls.push_back(boost::json::object{{"id", "c2"}, {"name", "confirm"}, {"args", boost::json::object{}}});
  c.messages.push_back(asked);
  auto answered = message("tool", "yes");
  answered.tool_call_id = "c1";
  c.messages.push_back(answered);
  c.messages.push_back(message("user", "never mind"));  // c2 abandoned

  const auto out = conversation_messages(c, "");
  REQUIRE(out.size() == 5);
  CHECK(out[2].at("tool_call_id") == "c1");
  CHECK(out[3].at("role") == "tool");
  CHECK(out[3].at("tool_call_id") == "c2");
  CHECK(std::string(out[3].at("content").as_string()).starts_with("(no result"));
  CHECK(out[4].at("content") == "never mind");

  const auto registry = make_builtin_tools();
  std::vector<client_tool> client{{"confirm", "asks", boost::json::object{{"type", "object"}}}};
  const auto body = boost::json::parse(chat_request_body({"m", {}, {}, ""}, c, registry.all(), client));
  const auto& tools = body.at("tools").as_array();
  REQUIRE(tools.size() == 3);
  CHECK(tools[2].at("function").at("name") == "confirm");
  CHECK(tools[2].at("function").at("parameters") == boost::json::parse(R"({"type":"object"})"));
}
