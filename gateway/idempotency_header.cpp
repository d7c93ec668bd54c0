#include "gateway/idempotency_header.hpp"

#include "core/api_error.hpp"

namespace agw::gateway {

bool valid_idempotency_key(std::string_view key) {
  if (key.empty() || key.size() > 255) return false;
  for (unsigned char c : key)
    if (c < 0x21 || c > 0x7e) return false;
  return true;
}

std::optional<std::string> idempotency_key_header(const request& req) {
  auto it = req.find("Idempotency-Key");
  if (it == req.end()) return std::nullopt;
  const std::string_view key = it->value();
  if (key.empty() || key.size() > 255)
    throw core::api_error(core::error_code::bad_request, "Idempotency-Key must be 1 to 255 characters");
  if (!valid_idempotency_key(key))
    throw core::api_error(core::error_code::bad_request, "Idempotency-Key must be printable ASCII");
  return std::string(key);
}

}  // namespace agw::gateway
