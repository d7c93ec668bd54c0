#include "gateway/request_guard.hpp"

#include <boost/algorithm/string/predicate.hpp>

#include "core/api_error.hpp"
#include "core/services/session_service.hpp"
#include "core/time_format.hpp"
#include "gateway/app_context.hpp"
#include "gateway/json_response.hpp"

namespace agw::gateway {
namespace {

enum class route_access { open, metrics, api };

route_access access_of(const std::vector<std::string>& segments) {
  if (segments.empty()) return route_access::open;  // the page: it asks for the key itself
  if (segments.size() == 1 && (segments[0] == "healthz" || segments[0] == "readyz")) return route_access::open;
  if (segments.size() == 1 && segments[0] == "metrics") return route_access::metrics;
  return route_access::api;
}

bool is_events_subscription(const request& req, const std::vector<std::string>& segments) {
  return (req.method() == http::verb::get || req.method() == http::verb::head) && segments.size() == 3 &&
         segments[0] == "sessions" && segments[2] == "events";
}

// Removes every ?token= (the handler never sees it); the first one, if any.
std::optional<std::string> take_token(core::query_params& query) {
  std::optional<std::string> token;
  std::erase_if(query, [&token](const auto& kv) {
    if (kv.first != "token") return false;
    if (!token) token = kv.second;
    return true;
  });
  return token;
}

std::optional<std::string> bearer_of(const request& req) {
  auto it = req.find(http::field::authorization);
  if (it == req.end()) return std::nullopt;
  std::string_view value = it->value();
  if (value.size() < 7 || !boost::algorithm::iequals(value.substr(0, 7), "Bearer ")) return std::nullopt;
  value.remove_prefix(7);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  return std::string(value);
}

response unauthorized(std::string message, unsigned version) {
  auto res = error_response({core::error_code::unauthorized, std::move(message)}, version);
  res.set(http::field::www_authenticate, "Bearer realm=\"agent-gateway\"");
  return res;
}

const char* token_refusal(auth::token_verdict v) {
  switch (v) {
    case auth::token_verdict::expired:
      return "stream token expired: get a new one from POST /sessions/{id}/stream-token";
    case auth::token_verdict::other_session:
      return "stream token was issued for another session";
    default:
      return "stream token is not valid";
  }
}

// A tenant's key sees only sessions whose scopes.tenant is its tenant; others do not exist for it.
awaitable<void> require_tenant_session(request_context& ctx, const std::string& session_id, const std::string& tenant) {
  core::session_service::check_id(session_id);
  auto requiring = ctx.app.sessions.require(session_id);
  auto session = co_await std::move(requiring);
  auto it = session.scopes.find("tenant");
  if (it == session.scopes.end() || it->second != tenant) throw core::api_error(core::error_code::not_found, "no such session");
}

}  // namespace

awaitable<handler_result> guard_request(request_context& ctx, const std::vector<std::string>& segments) {
  const auto& access = ctx.app.access;
  const unsigned version = ctx.req.version();
  const auto kind = access_of(segments);
  std::optional<std::string> token;
  if (is_events_subscription(ctx.req, segments)) token = take_token(ctx.query);
  if (kind == route_access::open) co_return std::nullopt;
  const auto bearer = bearer_of(ctx.req);
  if (kind == route_access::metrics) {
    if (auto matches = access.metrics_key_matches(bearer.value_or(""))) {
      if (*matches) co_return std::nullopt;
      co_return unauthorized("missing or invalid metrics key", version);
    }
  }
  if (!access.enabled()) co_return std::nullopt;
  if (!bearer && token) {
    const auto verdict = access.tokens().check(*token, segments[1], core::now_ms());
    if (verdict == auth::token_verdict::valid) co_return std::nullopt;
    co_return unauthorized(token_refusal(verdict), version);
  }
  if (!bearer) co_return unauthorized("missing API key: send Authorization: Bearer <key>", version);
  auto identity = access.find_key(*bearer);
  if (!identity) co_return unauthorized("invalid API key", version);
  ctx.tenant = identity->tenant;
  if (ctx.tenant && kind == route_access::api && segments.size() >= 2 && segments[0] == "sessions") {
    auto checking = require_tenant_session(ctx, segments[1], *ctx.tenant);
    co_await std::move(checking);
  }
  co_return std::nullopt;
}

}  // namespace agw::gateway
