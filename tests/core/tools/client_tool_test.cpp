// core/tools/client_tool: which calls of a conversation a client may still answer.
#include "core/tools/client_tool.hpp"

#include <doctest/doctest.h>

using namespace agw::core;

namespace {

message_record msg(std::string role, std::string tool_call_id = {}) {
  message_record m;
  m.role = std::move(role);
  if (!tool_call_id.empty()) m.tool_call_id = std::move(tool_call_id);
  return m;
}

message_record asking(std::initializer_list<const char*> ids) {
  auto m = msg("assistant");
  for (const auto* id : ids) m.tool_calls.push_back(boost::json::object{{"id", id}, {"name", "confirm"}});
  return m;
}

}  // namespace

TEST_CASE("pending_tool_calls: the newest assistant turn's calls without a result, until a user message comes") {
  conversation_state c;
  CHECK(pending_tool_calls(c).empty());
  c.messages = {msg("user"), asking({"a", "b"})};
  CHECK(pending_tool_calls(c).size() == 2);
  c.messages.push_back(msg("tool", "a"));
  REQUIRE(pending_tool_calls(c).size() == 1);
  CHECK(pending_tool_calls(c)[0].at("id") == "b");
  c.messages.push_back(msg("tool", "b"));
  CHECK(pending_tool_calls(c).empty());
  c.messages = {msg("user"), asking({"a"}), msg("user")};  // abandoned
  CHECK(pending_tool_calls(c).empty());
  c.messages = {msg("user"), asking({"a"}), msg("tool", "a"), msg("assistant")};  // a built-in step, then the answer
  CHECK(pending_tool_calls(c).empty());
}

TEST_CASE("find_client_tool: by name") {
  std::vector<client_tool> tools{{"a", "", {}}, {"b", "", {}}};
  CHECK(find_client_tool(tools, "b") == &tools[1]);
  CHECK(find_client_tool(tools, "c") == nullptr);
}
