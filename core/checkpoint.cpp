#include "core/checkpoint.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <stdexcept>

#include "core/time_format.hpp"

namespace agw::core {
namespace {

constexpr std::int64_t format_version = 1;

template <class T>
boost::json::value or_null(const std::optional<T>& v) {
  return v ? boost::json::value(*v) : boost::json::value(nullptr);
}

std::optional<std::string> opt_string(const boost::json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) return std::nullopt;
  return std::string(v->as_string());
}

std::optional<std::int64_t> opt_int(const boost::json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) return std::nullopt;
  return v->to_number<std::int64_t>();
}

}  // namespace

std::string serialize_checkpoint(const conversation_state& state) {
  boost::json::array messages;
  for (const auto& m : state.messages) {
    messages.push_back({{"id", m.id},
                        {"role", m.role},
                        {"content", m.content},
                        {"tool_calls", m.tool_calls},
                        {"tool_call_id", or_null(m.tool_call_id)},
                        {"token_count", or_null(m.token_count)},
                        {"model_used", or_null(m.model_used)},
                        {"parent_id", or_null(m.parent_id)},
                        {"status", m.status},
                        {"created_at_ms", m.created_at_ms}});
  }
  boost::json::object out{{"format", format_version}, {"messages", std::move(messages)}};
  if (state.run) {
    out["run"] = {{"id", state.run->id},
                  {"state", state.run->state},
                  {"user_message_id", state.run->user_message_id},
                  {"started_at_ms", state.run->started_at_ms},
                  {"ended_at_ms", or_null(state.run->ended_at_ms)},
                  {"events_before", state.run->events_before}};
    if (state.run->callback_url) out["run"].as_object()["callback_url"] = *state.run->callback_url;
  } else {
    out["run"] = nullptr;
  }
  return boost::json::serialize(out);
}

conversation_state parse_checkpoint(std::string_view text, const std::string& session_id) {
  auto root = boost::json::parse(text).as_object();
  if (root.at("format").to_number<std::int64_t>() != format_version) throw std::runtime_error("unknown checkpoint format");
  conversation_state state;
  std::int64_t seq = 0;
  for (const auto& v : root.at("messages").as_array()) {
    const auto& o = v.as_object();
    message_record m;
    m.id = std::string(o.at("id").as_string());
    m.session_id = session_id;
    m.seq = ++seq;
    m.role = std::string(o.at("role").as_string());
    m.content = std::string(o.at("content").as_string());
    m.tool_calls = o.at("tool_calls").as_array();
    m.tool_call_id = opt_string(o, "tool_call_id");
    m.token_count = opt_int(o, "token_count");
    m.model_used = opt_string(o, "model_used");
    m.parent_id = opt_string(o, "parent_id");
    m.status = std::string(o.at("status").as_string());
    m.created_at_ms = o.at("created_at_ms").to_number<std::int64_t>();
    state.messages.push_back(std::move(m));
  }
  if (auto* r = root.if_contains("run"); r && r->is_object()) {
    const auto& o = r->as_object();
    state.run = checkpoint_run{std::string(o.at("id").as_string()),
                               std::string(o.at("state").as_string()),
                               std::string(o.at("user_message_id").as_string()),
                               o.at("started_at_ms").to_number<std::int64_t>(),
                               opt_int(o, "ended_at_ms"),
                               opt_int(o, "events_before").value_or(0),
                               opt_string(o, "callback_url")};
  }
  return state;
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
          {"created_at", format_rfc3339_ms(m.created_at_ms)}};
}

}  // namespace agw::core
