#include "gateway/cors.hpp"

#include <algorithm>

namespace agw::gateway {
namespace {

// What a front end may send and read; Last-Event-ID and Idempotency-Key are the contract's.
constexpr const char* allowed_methods = "GET, HEAD, POST, PATCH, DELETE";
constexpr const char* allowed_headers = "Authorization, Content-Type, Accept, Last-Event-ID, Idempotency-Key, X-Request-Id";
constexpr const char* exposed_headers = "X-Run-Id, Content-Location, X-Request-Id, Retry-After, WWW-Authenticate";
constexpr const char* preflight_max_age = "600";  // seconds a browser may cache a preflight

// The value for Access-Control-Allow-Origin, or "" when the origin is not allowed.
std::string allowed_origin(const core::settings& config, const request& req) {
  auto it = req.find(http::field::origin);
  if (it == req.end() || config.cors_origins.empty()) return "";
  const std::string origin(it->value());
  const auto& allowed = config.cors_origins;
  if (std::find(allowed.begin(), allowed.end(), "*") != allowed.end()) return "*";
  if (std::find(allowed.begin(), allowed.end(), origin) != allowed.end()) return origin;
  return "";
}

}  // namespace

std::optional<response> answer_cors_preflight(const core::settings& config, const request& req) {
  if (config.cors_origins.empty() || req.method() != http::verb::options) return std::nullopt;
  if (req.find(http::field::origin) == req.end() || req.find(http::field::access_control_request_method) == req.end())
    return std::nullopt;
  // A refused origin gets the path's ordinary OPTIONS answer, with no CORS headers.
  const auto origin = allowed_origin(config, req);
  if (origin.empty()) return std::nullopt;
  response res{http::status::no_content, req.version()};
  // The answer depends on Origin: a cache must not hand one origin's answer to another.
  res.set(http::field::vary, "Origin");
  res.set(http::field::access_control_allow_origin, origin);
  res.set(http::field::access_control_allow_methods, allowed_methods);
  res.set(http::field::access_control_allow_headers, allowed_headers);
  res.set(http::field::access_control_max_age, preflight_max_age);
  res.prepare_payload();
  return res;
}

void add_cors_headers(const core::settings& config, const request& req, http::fields& headers) {
  if (config.cors_origins.empty()) return;
  headers.set(http::field::vary, "Origin");
  const auto origin = allowed_origin(config, req);
  if (origin.empty()) return;
  headers.set(http::field::access_control_allow_origin, origin);
  headers.set(http::field::access_control_expose_headers, exposed_headers);
}

}  // namespace agw::gateway
