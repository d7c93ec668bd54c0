#include "core/session_state.hpp"

#include <boost/json/serialize.hpp>

#include "core/api_error.hpp"

namespace agw::core {
namespace {

[[noreturn]] void bad(const std::string& message) { throw api_error(error_code::bad_request, message); }

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > state_limits::max_name_bytes) return false;
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f || c == ':') return false;  // ':' only ever separates the prefix
  return true;
}

}  // namespace

std::optional<state_key> parse_state_key(std::string_view key) {
  static constexpr std::pair<std::string_view, state_scope> prefixes[] = {
      {"user:", state_scope::user}, {"app:", state_scope::app}, {"temp:", state_scope::temp}};
  for (const auto& [prefix, scope] : prefixes)
    if (key.starts_with(prefix)) {
      auto name = key.substr(prefix.size());
      if (!valid_name(name)) return std::nullopt;
      return state_key{scope, std::string(name)};
    }
  if (!valid_name(key)) return std::nullopt;
  return state_key{state_scope::session, std::string(key)};
}

const char* scope_column(state_scope scope) {
  switch (scope) {
    case state_scope::session:
      return "session";
    case state_scope::user:
      return "user";
    case state_scope::app:
      return "app";
    case state_scope::temp:
      break;
  }
  return "temp";
}

std::string state_key_text(state_scope scope, const std::string& name) {
  if (scope == state_scope::session) return name;
  return std::string(scope_column(scope)) + ":" + name;
}

std::optional<std::string> state_owner(state_scope scope, const session_record& session) {
  auto tenant = session.scopes.find("tenant");
  const std::string tenant_name = tenant == session.scopes.end() ? "" : tenant->second;
  switch (scope) {
    case state_scope::session:
    case state_scope::temp:
      return session.id;
    case state_scope::user: {
      auto user = session.scopes.find("user");
      if (user == session.scopes.end()) return std::nullopt;
      // Tenant first, then the user: a tenant name holds no newline, so two tenants'
      // users never share an owner.
      return tenant_name + "\n" + user->second;
    }
    case state_scope::app:
      return tenant_name;
  }
  return std::nullopt;
}

std::vector<state_change> parse_state_patch(const boost::json::value& body, const session_record& session) {
  if (!body.is_object()) bad("request body must be a JSON object of state keys");
  const auto& o = body.get_object();
  if (o.empty()) bad("request body must name at least one state key");
  if (o.size() > state_limits::max_keys_per_patch)
    bad("a state PATCH may name at most " + std::to_string(state_limits::max_keys_per_patch) + " keys");
  std::vector<state_change> out;
  for (const auto& [k, v] : o) {
    auto key = parse_state_key(k);
    if (!key)
      bad("state key '" + std::string(k) + "' must be name, user:name, app:name or temp:name (a name is 1 to " +
          std::to_string(state_limits::max_name_bytes) + " bytes, no ':' or control characters)");
    if (key->scope == state_scope::user && !state_owner(state_scope::user, session))
      bad("state key '" + std::string(k) + "': user: keys need the session's scopes.user");
    state_change change{std::move(*key), std::nullopt};
    if (!v.is_null()) {
      change.value = boost::json::serialize(v);
      if (change.value->size() > state_limits::max_value_bytes)
        bad("state value of '" + std::string(k) + "' must be at most " + std::to_string(state_limits::max_value_bytes) +
            " bytes of JSON");
    }
    out.push_back(std::move(change));
  }
  return out;
}

}  // namespace agw::core
