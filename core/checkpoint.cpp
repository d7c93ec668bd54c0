#include "core/checkpoint.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "core/checkpoint_json.hpp"
#include "core/events/event_source.hpp"
#include "core/time_format.hpp"

namespace agw::core {
namespace {

template <class T>
boost::json::value or_null(const std::optional<T>& v) {
  return v ? boost::json::value(*v) : boost::json::value(nullptr);
}

}  // namespace

std::string serialize_checkpoint(const conversation_state& state) {
  boost::json::array messages;
  messages.reserve(state.messages.size());
  for (const auto& m : state.messages) messages.push_back(checkpoint_json::message_to_json(m));
  boost::json::object out{{"format", checkpoint_json::format_version}, {"messages", std::move(messages)}};
  out["run"] = checkpoint_json::run_to_json(state.run);
  return boost::json::serialize(out);
}

conversation_state parse_checkpoint(std::string_view text, const std::string& session_id) {
  auto root = boost::json::parse(text).as_object();
  checkpoint_json::require_format(root);
  conversation_state state;
  const auto& messages = root.at("messages").as_array();
  state.messages.reserve(messages.size());
  for (const auto& v : messages) {
    state.messages.push_back(checkpoint_json::message_from_json(v.as_object(), session_id));
    state.messages.back().seq = static_cast<std::int64_t>(state.messages.size());
  }
  state.run = checkpoint_json::run_from_json(root.if_contains("run"));
  return state;
}

std::string_view message_source(const message_record& m) {
  return m.source.empty() ? default_message_source(m.role) : std::string_view(m.source);
}

boost::json::object message_json(const message_record& m) {
  return {{"id", m.id},
          {"session_id", m.session_id},
          {"role", m.role},
          {"content", m.content},
          {"tool_calls", m.tool_calls},
          {"tool_call_id", or_null(m.tool_call_id)},
          {"token_count", or_null(m.token_count)},
          {"model_used", or_null(m.model_used)},
          {"parent_id", or_null(m.parent_id)},
          {"status", m.status},
          {"source", message_source(m)},
          {"created_at", format_rfc3339_ms(m.created_at_ms)}};
}

}  // namespace agw::core
