#include "core/webhook_secret.hpp"

#include <openssl/evp.h>

namespace agw::core {

std::optional<std::string> decode_webhook_secret(std::string_view secret) {
  constexpr std::string_view prefix = "whsec_";
  if (!secret.starts_with(prefix)) return std::nullopt;
  secret.remove_prefix(prefix.size());
  if (secret.empty() || secret.size() % 4 != 0 || secret.size() > 4096) return std::nullopt;
  std::string out(secret.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(secret.data()),
                          static_cast<int>(secret.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts padding bytes as output; drop them.
  std::size_t padding = secret.ends_with("==") ? 2 : secret.ends_with("=") ? 1 : 0;
  out.resize(static_cast<std::size_t>(n) - padding);
  if (out.size() < 16) return std::nullopt;
  return out;
}

}  // namespace agw::core
