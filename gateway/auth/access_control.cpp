#include "gateway/auth/access_control.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace agw::gateway::auth {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("GATEWAY_API_KEYS_FILE " + path + " cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

access_control::access_control(const core::settings& config)
    : config_(config),
      enabled_(!config.api_keys.empty() || !config.api_keys_file.empty()),
      keys_(load()),
      tokens_(config.stream_token_secret),
      token_ttl_(config.stream_token_ttl) {
  if (!config.metrics_key.empty()) metrics_key_.emplace(std::vector<core::api_key_entry>{{config.metrics_key, std::nullopt}});
}

std::shared_ptr<const api_key_set> access_control::load() const {
  std::vector<core::api_key_entry> entries = config_.api_keys;
  if (!config_.api_keys_file.empty()) {
    try {
      auto from_file = core::parse_api_keys_file(read_file(config_.api_keys_file));
      entries.insert(entries.end(), from_file.begin(), from_file.end());
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error("GATEWAY_API_KEYS_FILE " + config_.api_keys_file + ": " + e.what());
    }
  }
  return std::make_shared<const api_key_set>(entries);
}

std::optional<key_identity> access_control::find_key(std::string_view presented) const {
  const auto keys = keys_.load();
  return keys->find(presented);
}

std::optional<bool> access_control::metrics_key_matches(std::string_view presented) const {
  if (!metrics_key_) return std::nullopt;
  return metrics_key_->find(presented).has_value();
}

std::optional<std::string> access_control::reload() {
  try {
    keys_.store(load());
    return std::nullopt;
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
}

}  // namespace agw::gateway::auth
