#pragma once
// The state scopes of a session (docs/sessions.md, "State"), the pure part: which
// scope a key names, who owns it, and a PATCH body checked as a whole. Keys:
//   name        the session's own (persisted, deleted with the session)
//   user:name   shared by the sessions with the same scopes.user (and tenant)
//   app:name    shared by every session (of the tenant, when auth names one)
//   temp:name   the live run's only: kept in memory, gone when that run ends
// Thread-safe (no state).
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/session.hpp"

namespace agw::core {

enum class state_scope { session, user, app, temp };

struct state_limits {
  static constexpr std::size_t max_name_bytes = 128;
  static constexpr std::size_t max_value_bytes = 16 * 1024;  // serialized JSON
  static constexpr std::size_t max_keys_per_patch = 64;
  static constexpr std::size_t max_keys_per_owner = 256;  // after the PATCH, per scope
};

// A key split into its scope and name. nullopt: not a valid key.
struct state_key {
  state_scope scope;
  std::string name;  // without the prefix
};
std::optional<state_key> parse_state_key(std::string_view key);

// The stored scope column ("session", "user", "app"); temp has none.
const char* scope_column(state_scope scope);
// The key as the API shows it: the prefix back on the name.
std::string state_key_text(state_scope scope, const std::string& name);

// Who owns a persisted scope's keys for `session`: its id, its tenant + user (nullopt
// when the session has no scopes.user), its tenant ("" without one).
std::optional<std::string> state_owner(state_scope scope, const session_record& session);

struct state_change {
  state_key key;
  std::optional<std::string> value;  // serialized JSON; nullopt: delete the key (JSON null)
};

// Checks a PATCH body ({"key": value, ...}; null deletes) as a whole against `session`:
// throws api_error(bad_request) naming the first bad key, so nothing is applied.
std::vector<state_change> parse_state_patch(const boost::json::value& body, const session_record& session);

}  // namespace agw::core
