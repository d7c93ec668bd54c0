#include "core/tools/client_tool.hpp"

#include <algorithm>

namespace agw::core {

const client_tool* find_client_tool(const std::vector<client_tool>& tools, std::string_view name) {
  auto it = std::find_if(tools.begin(), tools.end(), [&](const client_tool& t) { return t.name == name; });
  return it == tools.end() ? nullptr : &*it;
}

boost::json::array pending_tool_calls(const conversation_state& conversation) {
  const auto& messages = conversation.messages;
  std::size_t i = messages.size();
  while (i > 0 && messages[i - 1].role == "tool") --i;
  if (i == 0 || messages[i - 1].role != "assistant") return {};
  boost::json::array pending;
  for (const auto& call : messages[i - 1].tool_calls) {
    const auto* id = call.is_object() ? call.get_object().if_contains("id") : nullptr;
    if (!id || !id->is_string()) continue;
    const bool answered = std::any_of(messages.begin() + static_cast<std::ptrdiff_t>(i), messages.end(),
                                      [&](const message_record& m) { return m.tool_call_id == id->get_string(); });
    if (!answered) pending.push_back(call);
  }
  return pending;
}

}  // namespace agw::core
