#pragma once
// Validation of client-supplied session bodies and list queries. Every function
// throws api_error(bad_request) with a message naming the offending field, and
// never returns a half-valid value, so handlers validate fully before storing.
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/session.hpp"

namespace agw::core {

// Limits on what a client may store; documented in docs/api-decisions.md.
struct session_limits {
  static constexpr std::size_t max_title = 1000;
  static constexpr std::size_t max_agent_name = 200;
  static constexpr std::size_t max_map_entries = 64;
  static constexpr std::size_t max_map_key = 128;
  static constexpr std::size_t max_map_value = 1024;
  static constexpr std::size_t max_config_bytes = 64 * 1024;
  static constexpr std::size_t max_labels = 32;        // per session, after every add
  static constexpr std::size_t max_label_bytes = 64;   // [A-Za-z0-9._:-]
  static constexpr std::size_t max_label_filters = 8;  // label= parameters of one list query
  static constexpr std::int64_t max_ttl_seconds = 366LL * 24 * 3600;
};

// A label: 1 to max_label_bytes of [A-Za-z0-9._:-] (no spaces, no commas: safe in query strings).
bool is_valid_label(std::string_view label);

// Fields a POST /sessions body may set; unset fields keep the defaults.
session_record parse_session_create(const boost::json::value& body);

// Applies a PATCH body (title, config, metadata, variables, status, mode, labels_add,
// labels_remove, ttl_seconds, event_webhook_url) to `session`.
void apply_session_patch(const boost::json::value& body, session_record& session);

struct session_filter {
  std::int64_t limit = 50;
  std::int64_t offset = 0;
  std::optional<std::string> status;
  std::vector<std::pair<std::string, std::string>> metadata;  // all must match
  std::vector<std::pair<std::string, std::string>> scopes;
  std::vector<std::string> labels;  // label=a&label=b: every one must be on the session
};

struct session_page {
  std::vector<session_record> sessions;
  std::int64_t total = 0;
};

// Query parameters already percent-decoded, in order of appearance.
using query_params = std::vector<std::pair<std::string, std::string>>;

session_filter parse_session_filter(const query_params& params);

// limit/offset shared by every paged list: non-negative integers, limit capped.
std::int64_t parse_limit(std::string_view text, std::int64_t max);
std::int64_t parse_offset(std::string_view text);

// Rejects a query string that names the same key twice (ambiguous intent).
void reject_duplicate_keys(const query_params& params);

// Validates config: its size, config.provider (a provider of
// builtin_provider_registry(), "mock" when absent), the fields every provider
// shares (model, temperature, max_tokens), then that provider's own options.
void validate_config(const boost::json::object& config);

}  // namespace agw::core
