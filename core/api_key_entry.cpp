#include "core/api_key_entry.hpp"

#include <stdexcept>

namespace agw::core {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Keys travel in an Authorization header: visible ASCII only, no separators we parse on.
bool valid_key_char(char c) { return c > ' ' && c < 0x7f && c != ',' && c != ':'; }

}  // namespace

std::optional<api_key_entry> parse_api_key_entry(std::string_view text, std::string& error) {
  text = trim(text);
  const auto colon = text.find(':');
  api_key_entry entry;
  entry.key = std::string(text.substr(0, colon));
  if (colon != std::string_view::npos) {
    auto tenant = text.substr(colon + 1);
    if (tenant.empty() || tenant.size() > 1024) {
      error = "a tenant after ':' must be 1 to 1024 characters";
      return std::nullopt;
    }
    entry.tenant = std::string(tenant);
  }
  if (entry.key.size() < api_key_entry::min_key_length || entry.key.size() > 512) {
    error = "an API key must be 16 to 512 characters";
    return std::nullopt;
  }
  for (char c : entry.key)
    if (!valid_key_char(c)) {
      error = "an API key must be visible ASCII without ',' or ':'";
      return std::nullopt;
    }
  return entry;
}

std::vector<api_key_entry> parse_api_key_list(std::string_view text) {
  std::vector<api_key_entry> out;
  while (!trim(text).empty()) {
    const auto comma = text.find(',');
    std::string error;
    auto entry = parse_api_key_entry(text.substr(0, comma), error);
    if (!entry) throw std::invalid_argument(error);
    out.push_back(std::move(*entry));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (trim(text).empty()) throw std::invalid_argument("must not end with a comma");
  }
  return out;
}

std::vector<api_key_entry> parse_api_keys_file(std::string_view content) {
  std::vector<api_key_entry> out;
  std::size_t line_number = 0;
  while (!content.empty()) {
    const auto newline = content.find('\n');
    const auto line = trim(content.substr(0, newline));
    content.remove_prefix(newline == std::string_view::npos ? content.size() : newline + 1);
    ++line_number;
    if (line.empty() || line.front() == '#') continue;
    std::string error;
    auto entry = parse_api_key_entry(line, error);
    if (!entry) throw std::invalid_argument("line " + std::to_string(line_number) + ": " + error);
    out.push_back(std::move(*entry));
  }
  return out;
}

}  // namespace agw::core
