#pragma once
// Stream tokens: what an EventSource (which cannot send an Authorization header)
// presents as ?token= on GET /sessions/{id}/events. A token is
//   base64url("v1." + expires_at_ms + "." + session_id) "." base64url(HMAC-SHA256(secret, payload))
// so it names its session and its expiry, and only the server can mint one.
// Immutable after construction: any thread may issue and check.
#include <cstdint>
#include <string>
#include <string_view>

namespace agw::gateway::auth {

enum class token_verdict { valid, malformed, bad_signature, other_session, expired };

class stream_token_signer {
 public:
  static constexpr std::size_t secret_bytes = 32;  // the random secret's size
  // An empty secret: 32 random bytes, so tokens die with the process.
  explicit stream_token_signer(std::string secret);

  std::string issue(std::string_view session_id, std::int64_t expires_at_ms) const;
  token_verdict check(std::string_view token, std::string_view session_id, std::int64_t now_ms) const;

 private:
  std::string mac(std::string_view payload) const;
  std::string secret_;
};

}  // namespace agw::gateway::auth
