#pragma once
// A session as stored, plus the live-run summary the API merges in.
#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace agw::core {

using string_map = std::map<std::string, std::string>;

struct run_summary {
  std::string id;
  std::int64_t started_at_ms = 0;
};

struct session_record {
  std::string id;
  std::string thread_id;
  std::optional<std::string> title;
  std::string status = "active";
  std::string agent_name = "default";
  boost::json::object config;
  string_map scopes;
  string_map metadata;                           // the integration's own: never shown to the agent
  string_map variables;                          // agent-visible (the openai system prompt, mock's echo_variables)
  std::set<std::string> labels;                  // accumulate (PATCH labels_add/remove, the agent profile's)
  std::optional<std::int64_t> ttl_seconds;       // idle seconds before expiry; none: GATEWAY_SESSION_TTL; 0: never
  std::optional<std::string> event_webhook_url;  // every event of the session is delivered there
  std::int64_t active_at_ms = 0;                 // the last activity (create, PATCH, a message): what the TTL counts from
  std::optional<std::int64_t> expires_at_ms;     // derived when read: active_at + the effective TTL
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;
  std::int64_t message_count = 0;  // derived from the messages projection when read
  std::int64_t last_event_id = 0;
  std::string mode = "auto";  // auto: the agent answers; manual: a human operator does (docs/timeline.md)
  // Not stored: session_hub::epoch() taken just before the store was asked for this row.
  // A channel made from it learns of the channel drops that came after (session_hub::channel).
  std::uint64_t read_epoch = 0;
};

// The contract's Session object.
boost::json::object to_json(const session_record& s, const std::optional<run_summary>& run);

bool is_session_status(std::string_view status);

// How a store keeps a session's maps (scopes, metadata, variables) and labels in a text
// column: a JSON object of strings, a JSON array (sorted, as the set is). Every store
// reads and writes the same form. The readers throw on text that is not that form.
std::string string_map_to_json(const string_map& m);
string_map string_map_from_json(const std::string& text);
std::string labels_to_json(const std::set<std::string>& labels);
std::set<std::string> labels_from_json(const std::string& text);

}  // namespace agw::core
