#include "core/agents/agent_profiles.hpp"

#include <boost/json/parse.hpp>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <variant>

#include "core/api_error.hpp"
#include "core/session_request.hpp"
#include "core/webhooks/callback_target.hpp"

namespace agw::core {

namespace json = boost::json;

namespace {

[[noreturn]] void refuse(const std::string& where, const std::string& why) {
  throw std::runtime_error("agent profiles: " + where + ": " + why);
}

std::string string_field(const json::object& o, std::string_view key, const std::string& where) {
  const auto* v = o.if_contains(key);
  if (!v) return {};
  if (!v->is_string()) refuse(where + "." + std::string(key), "must be a string");
  return std::string(v->get_string());
}

model_price parse_price(const json::value& v, const std::string& where) {
  const auto* o = v.if_object();
  if (!o) refuse(where, "must be an object {\"input\": n, \"output\": n}");
  model_price p;
  for (auto [key, slot] : {std::pair{"input", &p.input_per_million}, std::pair{"output", &p.output_per_million}}) {
    const auto* n = o->if_contains(key);
    if (!n || !n->is_number() || n->to_number<double>() < 0)
      refuse(where + "." + key, "must be a non-negative number (per million tokens)");
    *slot = n->to_number<double>();
  }
  return p;
}

std::vector<std::string> parse_tools(const json::value& v, const std::string& where) {
  const auto* a = v.if_array();
  if (!a) refuse(where, "must be a list of tool names");
  std::vector<std::string> out;
  for (const auto& t : *a) {
    if (!t.is_string()) refuse(where, "must be a list of tool names");
    out.emplace_back(t.get_string());
  }
  return out;
}

// The fields a session's config may also set; they form the profile's config.
constexpr std::string_view config_fields[] = {"provider", "model", "temperature", "max_tokens", "mock"};
constexpr std::string_view own_fields[] = {"base_url", "api_key", "api_key_env", "system_prompt",
                                           "tools",    "price",   "labels",      "event_webhook_url"};

bool is_one_of(std::string_view key, const auto& names) {
  for (auto n : names)
    if (n == key) return true;
  return false;
}

agent_profile parse_profile(const std::string& name, const json::value& v, const variable_lookup& env) {
  const std::string where = "profile '" + name + "'";
  const auto* o = v.if_object();
  if (!o) refuse(where, "must be an object");
  agent_profile p;
  p.name = name;
  for (const auto& [key, value] : *o) {
    if (is_one_of(key, config_fields))
      p.config[key] = value;
    else if (!is_one_of(key, own_fields))
      refuse(where, "unknown field '" + std::string(key) + "'");
  }
  p.base_url = string_field(*o, "base_url", where);
  if (!p.base_url.empty() && !p.base_url.starts_with("http://") && !p.base_url.starts_with("https://"))
    refuse(where + ".base_url", "must be an http:// or https:// URL");
  p.api_key = string_field(*o, "api_key", where);
  p.api_key_env = string_field(*o, "api_key_env", where);
  if (p.api_key.empty() && !p.api_key_env.empty()) p.api_key = env(p.api_key_env).value_or("");
  p.system_prompt = string_field(*o, "system_prompt", where);
  if (const auto* t = o->if_contains("tools")) p.tools = parse_tools(*t, where + ".tools");
  if (const auto* pr = o->if_contains("price")) p.price = parse_price(*pr, where + ".price");
  p.event_webhook_url = string_field(*o, "event_webhook_url", where);
  if (!p.event_webhook_url.empty())
    if (auto parsed = parse_callback_url(p.event_webhook_url); std::holds_alternative<std::string>(parsed))
      refuse(where + ".event_webhook_url", std::get<std::string>(parsed));
  if (const auto* l = o->if_contains("labels")) {
    const auto* a = l->if_array();
    if (!a || a->size() > session_limits::max_labels) refuse(where + ".labels", "must be a list of at most 32 labels");
    for (const auto& label : *a) {
      if (!label.is_string() || !is_valid_label(label.get_string()))
        refuse(where + ".labels", "must hold labels of 1 to 64 letters, digits, '.', '_', ':' or '-'");
      p.labels.emplace_back(label.get_string());
    }
  }
  return p;
}

}  // namespace

agent_profiles parse_agent_profiles(std::string_view json_text, const variable_lookup& env) {
  boost::system::error_code ec;
  auto root = json::parse(json_text, ec);
  if (ec) refuse("the file", "is not JSON (" + ec.message() + ")");
  const auto* o = root.if_object();
  if (!o) refuse("the file", "must be a JSON object with \"profiles\" and/or \"prices\"");
  agent_profiles out;
  for (const auto& [key, value] : *o)
    if (key != "profiles" && key != "prices") refuse("the file", "unknown field '" + std::string(key) + "'");
  if (const auto* profiles = o->if_contains("profiles")) {
    if (!profiles->is_object()) refuse("profiles", "must be an object of named profiles");
    for (const auto& [name, value] : profiles->get_object()) out.profiles.push_back(parse_profile(name, value, env));
  }
  if (const auto* prices = o->if_contains("prices")) {
    if (!prices->is_object()) refuse("prices", "must be an object of model names");
    for (const auto& [model, value] : prices->get_object())
      out.prices[std::string(model)] = parse_price(value, "prices." + std::string(model));
  }
  return out;
}

agent_profiles load_agent_profiles(const std::string& path, const variable_lookup& env) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("agent profiles: cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_agent_profiles(text.str(), env);
}

void check_agent_profiles(const agent_profiles& loaded, const provider_registry& providers, const tool_registry& tools) {
  for (const auto& p : loaded.profiles) {
    const std::string where = "profile '" + p.name + "'";
    try {
      validate_config(p.config);
    } catch (const api_error& e) {
      refuse(where, e.what());
    }
    if (const auto* named = p.config.if_contains("provider"); named && !providers.find(named->get_string()))
      refuse(where, "names an unknown provider");
    if (p.tools)
      for (const auto& t : *p.tools)
        if (!tools.find(t)) refuse(where + ".tools", "names an unknown tool '" + t + "'");
  }
}

}  // namespace agw::core
