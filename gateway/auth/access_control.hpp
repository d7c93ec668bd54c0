#pragma once
// The process's auth configuration: the API keys (from GATEWAY_API_KEYS and the
// keys file, swapped whole on reload), the /metrics key and the stream-token
// signer. Thread-safety: reload() may run on any thread while requests read;
// the keys are an immutable set behind an atomic shared_ptr, so a request
// sees the old set or the new one, never half of each.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/settings.hpp"
#include "gateway/auth/api_key_set.hpp"
#include "gateway/auth/stream_token.hpp"

namespace agw::gateway::auth {

class access_control {
 public:
  // Reads the keys file, if one is configured; throws std::runtime_error when it is unreadable or bad.
  explicit access_control(const core::settings& config);

  // API keys are required (keys configured, or a keys file, even an empty one).
  bool enabled() const { return enabled_; }
  std::optional<key_identity> find_key(std::string_view presented) const;

  // /metrics: its own key when configured (nullopt: it is guarded as the API is).
  std::optional<bool> metrics_key_matches(std::string_view presented) const;

  const stream_token_signer& tokens() const { return tokens_; }
  std::chrono::duration<double> token_ttl() const { return token_ttl_; }

  // Re-reads the keys file (SIGHUP); on failure the current keys stay and the reason is returned.
  std::optional<std::string> reload();

 private:
  std::shared_ptr<const api_key_set> load() const;

  const core::settings& config_;
  const bool enabled_;
  std::atomic<std::shared_ptr<const api_key_set>> keys_;
  std::optional<api_key_set> metrics_key_;
  stream_token_signer tokens_;
  std::chrono::duration<double> token_ttl_;
};

}  // namespace agw::gateway::auth
