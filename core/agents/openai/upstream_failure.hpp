#pragma once
// What went wrong upstream, in the contract's words: the error code a run ends
// with, the message (the upstream's own where it gave one), and whether the
// request may be tried again (only before the first token; the caller decides
// that). Pure functions; thread-safe.
#include <boost/system/error_code.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace agw::core::openai {

struct upstream_failure {
  std::string code;  // upstream_unavailable | upstream_auth | upstream_rate_limited | upstream_error | ...
  std::string message;
  bool retryable = false;
  std::optional<std::chrono::milliseconds> retry_after;  // the upstream's Retry-After
};

// A transport failure (streaming_http_errc) while connecting or reading; `detail` is the client's.
upstream_failure transport_failure(const boost::system::error_code& ec, const std::string& detail, bool during_body);
// A non-2xx answer: the status, the body it came with (an error object or text), Retry-After.
upstream_failure status_failure(int status, std::string_view body, const std::string* retry_after);
// The upstream's own message in an error body ({"error":{"message"}}, {"error":"…"}, {"message"}, or text).
std::string upstream_message(std::string_view body);
// Retry-After in seconds (an HTTP date is not honoured: none).
std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value);

}  // namespace agw::core::openai
