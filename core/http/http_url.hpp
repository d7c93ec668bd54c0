#pragma once
// An absolute http(s) URL taken apart for an outbound request: scheme, host,
// port and request target, with its shape checked (a host, no credentials, no
// fragment). Shared by completion callbacks and upstream (model) requests.
// Pure functions; thread-safe.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace agw::core {

struct http_url {
  bool https = false;
  std::string host;  // lower-case; an IPv6 literal without its brackets
  std::uint16_t port = 0;
  std::string target;  // path and query, "/" at least
  bool host_is_address = false;
};

// The URL, or why it is refused; `what` names it in the message ("callback_url must …").
std::variant<http_url, std::string> parse_http_url(std::string_view url, std::string_view what);

// The Host header for `u`: the port only when it is not the scheme's default.
std::string host_header(const http_url& u);

}  // namespace agw::core
