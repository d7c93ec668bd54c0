#include "core/checkpoint_json.hpp"

#include <stdexcept>

namespace agw::core::checkpoint_json {
namespace {

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

boost::json::object message_to_json(const message_record& m) {
  boost::json::object out{{"id", m.id},
                          {"role", m.role},
                          {"content", m.content},
                          {"tool_calls", m.tool_calls},
                          {"tool_call_id", or_null(m.tool_call_id)},
                          {"token_count", or_null(m.token_count)},
                          {"model_used", or_null(m.model_used)},
                          {"parent_id", or_null(m.parent_id)},
                          {"status", m.status},
                          {"created_at_ms", m.created_at_ms}};
  // Absent when unknown (a message from before sources): its readers default it by role.
  if (!m.source.empty()) out["source"] = m.source;
  return out;
}

message_record message_from_json(const boost::json::object& o, const std::string& session_id) {
  message_record m;
  m.id = std::string(o.at("id").as_string());
  m.session_id = session_id;
  m.role = std::string(o.at("role").as_string());
  m.content = std::string(o.at("content").as_string());
  m.tool_calls = o.at("tool_calls").as_array();
  m.tool_call_id = opt_string(o, "tool_call_id");
  m.token_count = opt_int(o, "token_count");
  m.model_used = opt_string(o, "model_used");
  m.parent_id = opt_string(o, "parent_id");
  m.status = std::string(o.at("status").as_string());
  m.created_at_ms = o.at("created_at_ms").to_number<std::int64_t>();
  m.source = opt_string(o, "source").value_or("");
  return m;
}

boost::json::value run_to_json(const std::optional<checkpoint_run>& run) {
  if (!run) return nullptr;
  boost::json::object out{{"id", run->id},
                          {"state", run->state},
                          {"user_message_id", run->user_message_id},
                          {"started_at_ms", run->started_at_ms},
                          {"ended_at_ms", or_null(run->ended_at_ms)},
                          {"events_before", run->events_before}};
  if (run->callback_url) out["callback_url"] = *run->callback_url;
  return out;
}

std::optional<checkpoint_run> run_from_json(const boost::json::value* v) {
  if (!v || !v->is_object()) return std::nullopt;
  const auto& o = v->as_object();
  return checkpoint_run{std::string(o.at("id").as_string()),
                        std::string(o.at("state").as_string()),
                        std::string(o.at("user_message_id").as_string()),
                        o.at("started_at_ms").to_number<std::int64_t>(),
                        opt_int(o, "ended_at_ms"),
                        opt_int(o, "events_before").value_or(0),
                        opt_string(o, "callback_url")};
}

void require_format(const boost::json::object& root) {
  if (root.at("format").to_number<std::int64_t>() != format_version) throw std::runtime_error("unknown checkpoint format");
}

}  // namespace agw::core::checkpoint_json
