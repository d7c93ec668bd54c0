// POST /sessions/{id}/stream-token: a token an EventSource presents as ?token= on
// GET /sessions/{id}/events, where it cannot send Authorization (gateway/auth/stream_token.hpp).
#include <cmath>

#include "core/services/session_service.hpp"
#include "core/time_format.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/app_context.hpp"
#include "gateway/json_response.hpp"

namespace agw::gateway::api {

awaitable<handler_result> issue_stream_token(request_context& ctx) {
  // Only for a session that exists (and, for a tenant's key, is its own: the guard checked).
  auto requiring = ctx.app.sessions.require(ctx.param(0));
  auto session = co_await std::move(requiring);
  const auto& access = ctx.app.access;
  const auto ttl_ms = static_cast<std::int64_t>(std::llround(access.token_ttl().count() * 1000.0));
  const std::int64_t expires_at = core::now_ms() + ttl_ms;
  boost::json::object body{{"token", access.tokens().issue(session.id, expires_at)},
                           {"expires_at", core::format_rfc3339_ms(expires_at)}};
  co_return json_response(http::status::ok, body, ctx.req.version());
}

}  // namespace agw::gateway::api
