#pragma once
// Standard Webhooks signing secrets: "whsec_" followed by base64 key bytes.
#include <optional>
#include <string>
#include <string_view>

namespace agw::core {

// The decoded key, or nullopt when the text is not a usable secret (at least 16 bytes).
std::optional<std::string> decode_webhook_secret(std::string_view secret);

}  // namespace agw::core
