#include "gateway/auth/stream_token.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <charconv>
#include <stdexcept>

#include "gateway/auth/base64url.hpp"

namespace agw::gateway::auth {
namespace {

constexpr std::string_view version_prefix = "v1.";

}  // namespace

stream_token_signer::stream_token_signer(std::string secret) : secret_(std::move(secret)) {
  if (!secret_.empty()) return;
  secret_.resize(secret_bytes);
  if (RAND_bytes(reinterpret_cast<unsigned char*>(secret_.data()), static_cast<int>(secret_.size())) != 1)
    throw std::runtime_error("no randomness for the stream token secret");
}

std::string stream_token_signer::mac(std::string_view payload) const {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (!HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
            reinterpret_cast<const unsigned char*>(payload.data()), payload.size(), out, &size))
    throw std::runtime_error("HMAC-SHA256 failed");
  return std::string(reinterpret_cast<const char*>(out), size);
}

std::string stream_token_signer::issue(std::string_view session_id, std::int64_t expires_at_ms) const {
  std::string payload(version_prefix);
  payload += std::to_string(expires_at_ms);
  payload += '.';
  payload += session_id;
  return base64url_encode(payload) + "." + base64url_encode(mac(payload));
}

token_verdict stream_token_signer::check(std::string_view token, std::string_view session_id, std::int64_t now_ms) const {
  const auto dot = token.find('.');
  if (dot == std::string_view::npos) return token_verdict::malformed;
  auto payload = base64url_decode(token.substr(0, dot));
  auto presented_mac = base64url_decode(token.substr(dot + 1));
  if (!payload || !presented_mac || !payload->starts_with(version_prefix)) return token_verdict::malformed;
  // Fixed length (32 bytes) compared in constant time before anything in the payload is trusted.
  const std::string expected_mac = mac(*payload);
  if (presented_mac->size() != expected_mac.size() ||
      CRYPTO_memcmp(presented_mac->data(), expected_mac.data(), expected_mac.size()) != 0)
    return token_verdict::bad_signature;
  std::string_view rest(*payload);
  rest.remove_prefix(version_prefix.size());
  const auto sep = rest.find('.');
  if (sep == std::string_view::npos) return token_verdict::malformed;
  std::int64_t expires_at = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + sep, expires_at);
  if (ec != std::errc{} || end != rest.data() + sep) return token_verdict::malformed;
  if (rest.substr(sep + 1) != session_id) return token_verdict::other_session;
  if (now_ms >= expires_at) return token_verdict::expired;
  return token_verdict::valid;
}

}  // namespace agw::gateway::auth
