#include "gateway/auth/api_key_set.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <stdexcept>

namespace agw::gateway::auth {

api_key_set::api_key_set(const std::vector<core::api_key_entry>& entries) {
  keys_.reserve(entries.size());
  for (const auto& e : entries) keys_.push_back({hash(e.key), e.tenant});
}

api_key_set::digest api_key_set::hash(std::string_view text) {
  digest out{};
  unsigned int size = 0;
  if (!EVP_Digest(text.data(), text.size(), out.data(), &size, EVP_sha256(), nullptr) || size != out.size())
    throw std::runtime_error("SHA-256 failed");
  return out;
}

std::optional<key_identity> api_key_set::find(std::string_view presented) const {
  const digest presented_hash = hash(presented);
  const stored_key* match = nullptr;
  // Every stored key is compared, whichever matches: the loop's length is the set's.
  for (const auto& k : keys_) {
    const bool equal = CRYPTO_memcmp(k.hash.data(), presented_hash.data(), presented_hash.size()) == 0;
    if (equal && !match) match = &k;
  }
  if (!match) return std::nullopt;
  return key_identity{match->tenant};
}

}  // namespace agw::gateway::auth
