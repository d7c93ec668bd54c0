#pragma once
// A set of API keys held as SHA-256 digests and matched in constant time:
// every presented key is hashed to a fixed 32 bytes and compared with every
// stored digest (CRYPTO_memcmp, no early exit), so neither a key's length nor
// its position in the set, nor how many leading bytes match, shows in the timing.
// Immutable after construction: any thread may call find().
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/api_key_entry.hpp"

namespace agw::gateway::auth {

// Who a matched key speaks for.
struct key_identity {
  std::optional<std::string> tenant;  // nullopt: every session
};

class api_key_set {
 public:
  api_key_set() = default;
  explicit api_key_set(const std::vector<core::api_key_entry>& entries);

  std::optional<key_identity> find(std::string_view presented) const;
  bool empty() const { return keys_.empty(); }
  std::size_t size() const { return keys_.size(); }

 private:
  using digest = std::array<unsigned char, 32>;
  struct stored_key {
    digest hash;
    std::optional<std::string> tenant;
  };
  static digest hash(std::string_view text);
  std::vector<stored_key> keys_;
};

}  // namespace agw::gateway::auth
