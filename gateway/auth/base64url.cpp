#include "gateway/auth/base64url.hpp"

#include <openssl/evp.h>

namespace agw::gateway::auth {

std::string base64url_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return out;
}

std::optional<std::string> base64url_decode(std::string_view text) {
  // One leftover character cannot encode a byte.
  if (text.size() % 4 == 1 || text.size() > 4096) return std::nullopt;
  std::string standard;
  standard.reserve(text.size() + 3);
  for (char c : text) {
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && c != '-' && c != '_') return std::nullopt;
    standard += c == '-' ? '+' : c == '_' ? '/' : c;
  }
  const std::size_t padding = (4 - standard.size() % 4) % 4;
  standard.append(padding, '=');
  std::string out(standard.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(standard.data()), static_cast<int>(standard.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding's zero bytes too.
  out.resize(static_cast<std::size_t>(n) - padding);
  // Non-canonical trailing bits would let two texts name one token.
  if (base64url_encode(out) != text) return std::nullopt;
  return out;
}

}  // namespace agw::gateway::auth
