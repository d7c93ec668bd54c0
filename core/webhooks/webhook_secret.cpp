#include "core/webhooks/webhook_secret.hpp"

#include <openssl/evp.h>

namespace agw::core {

std::optional<std::string> decode_webhook_secret(std::string_view secret) {
  constexpr std::string_view prefix = "whsec_";
  if (!secret.starts_with(prefix)) return std::nullopt;
  secret.remove_prefix(prefix.size());
  if (secret.empty() || secret.size() % 4 != 0 || secret.size() > 4096) return std::nullopt;
  // EVP_DecodeBlock tolerates '=' anywhere and trailing blanks: insist on strict base64 first.
  const std::size_t padding = secret.ends_with("==") ? 2 : secret.ends_with("=") ? 1 : 0;
  for (std::size_t i = 0; i < secret.size() - padding; ++i) {
    const char c = secret[i];
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (!ok) return std::nullopt;
  }
  std::string out(secret.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(secret.data()),
                          static_cast<int>(secret.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts padding bytes as output; drop them.
  out.resize(static_cast<std::size_t>(n) - padding);
  if (out.size() < 16) return std::nullopt;
  return out;
}

}  // namespace agw::core
