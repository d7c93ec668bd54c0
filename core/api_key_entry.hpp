#pragma once
// One API key as configured: "key" or "key:tenant" (GATEWAY_API_KEYS entries and
// the lines of GATEWAY_API_KEYS_FILE). Pure parsing, shared by the settings
// parser (a bad value stops start-up) and the gateway's keys-file reload.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agw::core {

struct api_key_entry {
  static constexpr std::size_t min_key_length = 16;  // shorter keys are guessable
  std::string key;
  std::optional<std::string> tenant;  // only sessions with scopes.tenant == tenant
};

// The entry, or the reason it is refused (in `error`).
std::optional<api_key_entry> parse_api_key_entry(std::string_view text, std::string& error);

// Comma-separated entries (GATEWAY_API_KEYS); throws std::invalid_argument with the reason.
std::vector<api_key_entry> parse_api_key_list(std::string_view text);

// A keys file: one entry per line; blank lines and lines starting with '#' are skipped.
// Throws std::invalid_argument naming the bad line.
std::vector<api_key_entry> parse_api_keys_file(std::string_view content);

}  // namespace agw::core
