#include "core/agents/openai/chat_request.hpp"

#include <boost/json/serialize.hpp>

namespace agw::core::openai {

namespace json = boost::json;

namespace {

json::object assistant_message(const message_record& m) {
  json::object out{{"role", "assistant"}};
  // An assistant turn that only called tools has null content, as the API sends it back.
  out["content"] = m.content.empty() && !m.tool_calls.empty() ? json::value(nullptr) : json::value(m.content);
  if (m.tool_calls.empty()) return out;
  json::array calls;
  for (const auto& c : m.tool_calls) {
    const auto& call = c.as_object();
    const auto* args = call.if_contains("args");
    json::object fn{{"name", call.at("name")}, {"arguments", args ? json::serialize(*args) : std::string("{}")}};
    calls.push_back(json::object{{"id", call.at("id")}, {"type", "function"}, {"function", std::move(fn)}});
  }
  out["tool_calls"] = std::move(calls);
  return out;
}

json::object tool_declaration(const tool& t) {
  json::object fn{{"name", t.name()}, {"description", t.description()}, {"parameters", t.parameters_schema()}};
  return {{"type", "function"}, {"function", std::move(fn)}};
}

json::object tool_declaration(const client_tool& t) {
  json::object fn{{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}};
  return {{"type", "function"}, {"function", std::move(fn)}};
}

// The API refuses an assistant turn whose calls are not all followed by a result. A call
// handed to a client that never answered (a user message came instead) gets this one.
constexpr std::string_view unanswered_call = "(no result: the client did not run this tool call)";

void close_unanswered(json::array& out, std::vector<std::string>& open_calls) {
  for (const auto& id : open_calls)
    out.push_back(json::object{{"role", "tool"}, {"tool_call_id", id}, {"content", unanswered_call}});
  open_calls.clear();
}

}  // namespace

json::array conversation_messages(const conversation_state& conversation, const std::string& system_prompt) {
  json::array out;
  if (!system_prompt.empty()) out.push_back(json::object{{"role", "system"}, {"content", system_prompt}});
  std::vector<std::string> open_calls;  // of the newest assistant turn, not yet answered
  for (const auto& m : conversation.messages) {
    if (m.role == "tool") {
      std::erase(open_calls, m.tool_call_id.value_or(""));
    } else {
      close_unanswered(out, open_calls);
    }
    if (m.role == "assistant") {
      for (const auto& c : m.tool_calls)
        if (const auto* id = c.as_object().if_contains("id"); id && id->is_string()) open_calls.emplace_back(id->get_string());
      // An answer cut off before its first token says nothing the model needs.
      if (m.content.empty() && m.tool_calls.empty()) continue;
      out.push_back(assistant_message(m));
    } else if (m.role == "tool") {
      out.push_back(json::object{{"role", "tool"}, {"tool_call_id", m.tool_call_id.value_or("")}, {"content", m.content}});
    } else {
      out.push_back(json::object{{"role", m.role}, {"content", m.content}});
    }
  }
  close_unanswered(out, open_calls);  // a client answered only some of its calls
  return out;
}

std::string chat_request_body(const chat_settings& settings, const conversation_state& conversation,
                              const std::vector<const tool*>& tools, const std::vector<client_tool>& client_tools) {
  json::object body{{"model", settings.model},
                    {"stream", true},
                    {"stream_options", json::object{{"include_usage", true}}},
                    {"messages", conversation_messages(conversation, settings.system_prompt)}};
  if (settings.temperature) body["temperature"] = *settings.temperature;
  if (settings.max_tokens) body["max_tokens"] = *settings.max_tokens;
  if (!tools.empty() || !client_tools.empty()) {
    json::array declared;
    for (const auto* t : tools) declared.push_back(tool_declaration(*t));
    for (const auto& t : client_tools) declared.push_back(tool_declaration(t));
    body["tools"] = std::move(declared);
  }
  return json::serialize(body);
}

}  // namespace agw::core::openai
