#pragma once
// A callback_url taken apart and checked for shape: absolute http(s), a host,
// no credentials, no fragment, at most max_callback_url_bytes. Where it may
// point (the address policy) is decided after resolving its host.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "core/http/http_url.hpp"

namespace agw::core {

inline constexpr std::size_t max_callback_url_bytes = 2048;

using callback_target = http_url;

// The target, or the reason the URL is refused (for a 400 message).
std::variant<callback_target, std::string> parse_callback_url(std::string_view url);

}  // namespace agw::core
