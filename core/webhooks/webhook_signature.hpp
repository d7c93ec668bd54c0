#pragma once
// Standard Webhooks signing (https://www.standardwebhooks.com/): the
// webhook-signature header is "v1," + base64(HMAC-SHA256(key, id.timestamp.body)),
// key being the base64-decoded part of the whsec_ secret. OpenSSL does the crypto.
#include <cstdint>
#include <string>
#include <string_view>

namespace agw::core {

std::string base64_encode(std::string_view bytes);

// "v1,<base64 signature>" for one attempt.
std::string webhook_signature(std::string_view key, std::string_view webhook_id, std::int64_t timestamp_s, std::string_view body);

}  // namespace agw::core
