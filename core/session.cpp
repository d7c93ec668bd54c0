#include "core/session.hpp"

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "core/time_format.hpp"

namespace agw::core {
namespace {

boost::json::object to_json(const string_map& map) {
  boost::json::object out;
  for (const auto& [k, v] : map) out[k] = v;
  return out;
}

}  // namespace

boost::json::object to_json(const session_record& s, const std::optional<run_summary>& run) {
  boost::json::object out;
  out["id"] = s.id;
  out["thread_id"] = s.thread_id;
  out["title"] = s.title ? boost::json::value(*s.title) : boost::json::value(nullptr);
  out["status"] = s.status;
  out["agent_name"] = s.agent_name;
  out["config"] = s.config;
  out["scopes"] = to_json(s.scopes);
  out["metadata"] = to_json(s.metadata);
  out["variables"] = to_json(s.variables);
  boost::json::array labels;
  for (const auto& l : s.labels) labels.emplace_back(l);
  out["labels"] = std::move(labels);
  out["ttl_seconds"] = s.ttl_seconds ? boost::json::value(*s.ttl_seconds) : boost::json::value(nullptr);
  out["expires_at"] = s.expires_at_ms ? boost::json::value(format_rfc3339_ms(*s.expires_at_ms)) : boost::json::value(nullptr);
  out["event_webhook_url"] = s.event_webhook_url ? boost::json::value(*s.event_webhook_url) : boost::json::value(nullptr);
  out["created_at"] = format_rfc3339_ms(s.created_at_ms);
  out["updated_at"] = format_rfc3339_ms(s.updated_at_ms);
  out["message_count"] = s.message_count;
  out["last_event_id"] = s.last_event_id;
  out["mode"] = s.mode;
  if (run)
    out["run"] =
        boost::json::object{{"id", run->id}, {"state", "running"}, {"started_at", format_rfc3339_ms(run->started_at_ms)}};
  else
    out["run"] = nullptr;
  return out;
}

bool is_session_status(std::string_view status) { return status == "active" || status == "inactive" || status == "error"; }

std::string string_map_to_json(const string_map& m) {
  boost::json::object o;
  for (const auto& [k, v] : m) o[k] = v;
  return boost::json::serialize(o);
}

string_map string_map_from_json(const std::string& text) {
  string_map out;
  const auto parsed = boost::json::parse(text);  // named: the loop must not outlive it
  for (const auto& [k, value] : parsed.as_object()) out[std::string(k)] = std::string(value.as_string());
  return out;
}

std::string labels_to_json(const std::set<std::string>& labels) {
  boost::json::array a;
  for (const auto& l : labels) a.emplace_back(l);
  return boost::json::serialize(a);
}

std::set<std::string> labels_from_json(const std::string& text) {
  std::set<std::string> out;
  const auto parsed = boost::json::parse(text);  // named: the loop must not outlive it
  for (const auto& l : parsed.as_array()) out.emplace(l.as_string());
  return out;
}

}  // namespace agw::core
