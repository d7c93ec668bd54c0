#include "core/session_request.hpp"

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <charconv>
#include <set>
#include <variant>

#include "core/agents/provider_registry.hpp"
#include "core/api_error.hpp"
#include "core/context_window.hpp"
#include "core/runs/multitask.hpp"
#include "core/webhooks/callback_target.hpp"

namespace agw::core {
namespace {

[[noreturn]] void bad(const std::string& message) { throw api_error(error_code::bad_request, message); }

const boost::json::object& require_object(const boost::json::value& body) {
  if (!body.is_object()) bad("request body must be a JSON object");
  return body.get_object();
}

std::optional<std::string> parse_title(const boost::json::value& v) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) bad("title must be a string or null");
  if (v.get_string().size() > session_limits::max_title)
    bad("title must be at most " + std::to_string(session_limits::max_title) + " bytes");
  return std::string(v.get_string());
}

string_map parse_string_map(const boost::json::value& v, const char* field) {
  if (!v.is_object()) bad(std::string(field) + " must be an object of string values");
  const auto& o = v.get_object();
  if (o.size() > session_limits::max_map_entries)
    bad(std::string(field) + " may have at most " + std::to_string(session_limits::max_map_entries) + " entries");
  string_map out;
  for (const auto& [k, value] : o) {
    if (k.empty() || k.size() > session_limits::max_map_key)
      bad(std::string(field) + " keys must be 1 to " + std::to_string(session_limits::max_map_key) + " bytes");
    if (!value.is_string()) bad(std::string(field) + "." + std::string(k) + " must be a string");
    if (value.get_string().size() > session_limits::max_map_value)
      bad(std::string(field) + " values must be at most " + std::to_string(session_limits::max_map_value) + " bytes");
    out[std::string(k)] = std::string(value.get_string());
  }
  return out;
}

boost::json::object parse_config(const boost::json::value& v) {
  if (!v.is_object()) bad("config must be an object");
  validate_config(v.get_object());
  return v.get_object();
}

std::string parse_mode(const boost::json::value& v) {
  if (!v.is_string() || (v.get_string() != "auto" && v.get_string() != "manual")) bad("mode must be \"auto\" or \"manual\"");
  return std::string(v.get_string());
}

std::string parse_status(const boost::json::value& v) {
  if (!v.is_string() || (v.get_string() != "active" && v.get_string() != "inactive"))
    bad("status must be \"active\" or \"inactive\"");
  return std::string(v.get_string());
}

std::vector<std::string> parse_labels(const boost::json::value& v, const char* field) {
  if (!v.is_array()) bad(std::string(field) + " must be an array of labels");
  if (v.get_array().size() > session_limits::max_labels)
    bad(std::string(field) + " may have at most " + std::to_string(session_limits::max_labels) + " labels");
  std::vector<std::string> out;
  for (const auto& l : v.get_array()) {
    if (!l.is_string() || !is_valid_label(l.get_string()))
      bad(std::string(field) + " entries must be 1 to " + std::to_string(session_limits::max_label_bytes) +
          " bytes of letters, digits, '.', '_', ':' or '-'");
    out.emplace_back(l.get_string());
  }
  return out;
}

void check_label_count(const session_record& s) {
  if (s.labels.size() > session_limits::max_labels)
    bad("a session may have at most " + std::to_string(session_limits::max_labels) + " labels");
}

std::optional<std::int64_t> parse_ttl(const boost::json::value& v) {
  if (v.is_null()) return std::nullopt;
  const bool ok = (v.is_int64() && v.get_int64() >= 0 && v.get_int64() <= session_limits::max_ttl_seconds) ||
                  (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(session_limits::max_ttl_seconds));
  if (!ok) bad("ttl_seconds must be null or an integer from 0 to " + std::to_string(session_limits::max_ttl_seconds));
  return v.to_number<std::int64_t>();
}

std::optional<std::string> parse_event_webhook_url(const boost::json::value& v) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) bad("event_webhook_url must be a string or null");
  auto parsed = parse_callback_url(v.get_string());
  if (auto* why = std::get_if<std::string>(&parsed)) bad("event_webhook_url: " + *why);
  return std::string(v.get_string());
}

}  // namespace

bool is_valid_label(std::string_view label) {
  if (label.empty() || label.size() > session_limits::max_label_bytes) return false;
  for (char c : label) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                    c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

void validate_config(const boost::json::object& config) {
  if (boost::json::serialize(config).size() > session_limits::max_config_bytes)
    bad("config must be at most " + std::to_string(session_limits::max_config_bytes) + " bytes of JSON");
  const auto& provider = builtin_provider_registry().select(config);
  if (auto* m = config.if_contains("model"); m && !m->is_string()) bad("config.model must be a string");
  if (auto* t = config.if_contains("temperature")) {
    if (!t->is_number() || t->to_number<double>() < 0 || t->to_number<double>() > 2)
      bad("config.temperature must be a number from 0 to 2");
  }
  if (auto* t = config.if_contains("max_tokens")) {
    bool ok = (t->is_int64() && t->get_int64() > 0) || (t->is_uint64() && t->get_uint64() > 0 && t->get_uint64() < (1ull << 32));
    if (!ok) bad("config.max_tokens must be a positive integer");
  }
  if (auto* m = config.if_contains("multitask"); m && (!m->is_string() || !multitask_named(m->get_string())))
    bad("config.multitask must be \"reject\", \"enqueue\" or \"interrupt\"");
  parse_context_window(config);  // config.context: throws on a bad window
  // The provider's own options last, after the fields every provider shares.
  provider.validate(config);
}

session_record parse_session_create(const boost::json::value& body) {
  const auto& o = require_object(body);
  session_record s;
  if (auto* v = o.if_contains("title")) s.title = parse_title(*v);
  if (auto* v = o.if_contains("agent_name")) {
    if (!v->is_string() || v->get_string().empty() || v->get_string().size() > session_limits::max_agent_name)
      bad("agent_name must be a non-empty string of at most " + std::to_string(session_limits::max_agent_name) + " bytes");
    s.agent_name = std::string(v->get_string());
  }
  if (auto* v = o.if_contains("config"); v && !v->is_null()) s.config = parse_config(*v);
  if (auto* v = o.if_contains("scopes"); v && !v->is_null()) s.scopes = parse_string_map(*v, "scopes");
  if (auto* v = o.if_contains("metadata"); v && !v->is_null()) s.metadata = parse_string_map(*v, "metadata");
  if (auto* v = o.if_contains("mode")) s.mode = parse_mode(*v);
  if (auto* v = o.if_contains("variables"); v && !v->is_null()) s.variables = parse_string_map(*v, "variables");
  if (auto* v = o.if_contains("labels"); v && !v->is_null())
    for (auto& l : parse_labels(*v, "labels")) s.labels.insert(std::move(l));
  if (auto* v = o.if_contains("ttl_seconds")) s.ttl_seconds = parse_ttl(*v);
  if (auto* v = o.if_contains("event_webhook_url")) s.event_webhook_url = parse_event_webhook_url(*v);
  return s;
}

void apply_session_patch(const boost::json::value& body, session_record& session) {
  const auto& o = require_object(body);
  // Parse everything first so a bad field leaves the session untouched.
  session_record next = session;
  if (auto* v = o.if_contains("title")) next.title = parse_title(*v);
  if (auto* v = o.if_contains("config")) next.config = v->is_null() ? boost::json::object{} : parse_config(*v);
  if (auto* v = o.if_contains("metadata")) next.metadata = v->is_null() ? string_map{} : parse_string_map(*v, "metadata");
  if (auto* v = o.if_contains("variables")) next.variables = v->is_null() ? string_map{} : parse_string_map(*v, "variables");
  if (auto* v = o.if_contains("status")) next.status = parse_status(*v);
  if (auto* v = o.if_contains("mode")) next.mode = parse_mode(*v);
  if (o.contains("labels")) bad("labels change by labels_add and labels_remove only");
  // Removals after additions: a label named in both ends up absent.
  if (auto* v = o.if_contains("labels_add"))
    for (auto& l : parse_labels(*v, "labels_add")) next.labels.insert(std::move(l));
  if (auto* v = o.if_contains("labels_remove"))
    for (const auto& l : parse_labels(*v, "labels_remove")) next.labels.erase(l);
  check_label_count(next);
  if (auto* v = o.if_contains("ttl_seconds")) next.ttl_seconds = parse_ttl(*v);
  if (auto* v = o.if_contains("event_webhook_url")) next.event_webhook_url = parse_event_webhook_url(*v);
  session = std::move(next);
}

std::int64_t parse_limit(std::string_view text, std::int64_t max) {
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec == std::errc::result_out_of_range) {
    // A huge but well-formed number is still "above the maximum": cap it.
    bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
    if (digits) return max;
    bad("limit must be a non-negative integer");
  }
  if (ec != std::errc{} || end != text.data() + text.size() || n < 0) bad("limit must be a non-negative integer");
  return std::min(n, max);
}

std::int64_t parse_offset(std::string_view text) {
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || n < 0)
    bad("offset must be a non-negative integer");
  return n;
}

void reject_duplicate_keys(const query_params& params) {
  std::set<std::string_view> seen;
  for (const auto& [k, v] : params)
    if (!seen.insert(k).second) bad("query parameter '" + k + "' is given more than once");
}

session_filter parse_session_filter(const query_params& params) {
  // label= is the one parameter that repeats (each names one more label required).
  query_params single;
  for (const auto& p : params)
    if (p.first != "label") single.push_back(p);
  reject_duplicate_keys(single);
  session_filter f;
  for (const auto& [key, value] : params) {
    if (key == "label") {
      if (!is_valid_label(value))
        bad("label must be 1 to " + std::to_string(session_limits::max_label_bytes) +
            " bytes of letters, digits, '.', '_', ':' or '-'");
      if (std::find(f.labels.begin(), f.labels.end(), value) == f.labels.end()) f.labels.push_back(value);
      if (f.labels.size() > session_limits::max_label_filters)
        bad("at most " + std::to_string(session_limits::max_label_filters) + " label filters");
    } else if (key == "limit")
      f.limit = parse_limit(value, 500);
    else if (key == "offset")
      f.offset = parse_offset(value);
    else if (key == "status") {
      if (!is_session_status(value)) bad("status must be active, inactive or error");
      f.status = value;
    } else if (key.starts_with("metadata.") && key.size() > 9)
      f.metadata.emplace_back(key.substr(9), value);
    else if (key.starts_with("scopes.") && key.size() > 7)
      f.scopes.emplace_back(key.substr(7), value);
    else
      bad("unknown query parameter '" + key + "'");
  }
  return f;
}

}  // namespace agw::core
