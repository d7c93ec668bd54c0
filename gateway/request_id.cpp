#include "gateway/request_id.hpp"

#include <random>

namespace agw::gateway {

bool sane_request_id(std::string_view id) {
  if (id.empty() || id.size() > max_request_id_length) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                    c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string new_request_id() {
  // One generator per io thread: no lock, and ids need to be unique, not secret.
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::uint64_t bits = rng();
  std::string id(16, '0');
  for (auto& c : id) {
    c = hex[bits & 0xf];
    bits >>= 4;
  }
  return id;
}

std::string request_id_for(const request& req) {
  if (req.count("X-Request-Id") == 1) {
    auto given = req["X-Request-Id"];
    if (sane_request_id(given)) return std::string(given);
  }
  return new_request_id();
}

}  // namespace agw::gateway
