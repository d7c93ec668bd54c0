#pragma once
// SHA-256 of a text, hex-encoded (OpenSSL): compares idempotent retries' content.
#include <string>
#include <string_view>

namespace agw::core {

std::string content_hash(std::string_view text);

}  // namespace agw::core
