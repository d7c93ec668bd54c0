#pragma once
// A callback_url taken apart and checked for shape: absolute http(s), a host,
// no credentials, no fragment, at most max_callback_url_bytes. Where it may
// point (the address policy) is decided after resolving its host.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace agw::core {

inline constexpr std::size_t max_callback_url_bytes = 2048;

struct callback_target {
  bool https = false;
  std::string host;  // lower-case; an IPv6 literal without its brackets
  std::uint16_t port = 0;
  std::string target;  // path and query, "/" at least
  bool host_is_address = false;
};

// The target, or the reason the URL is refused (for a 400 message).
std::variant<callback_target, std::string> parse_callback_url(std::string_view url);

}  // namespace agw::core
