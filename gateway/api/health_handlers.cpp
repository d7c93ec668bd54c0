// GET /healthz, /readyz, /metrics.
#include "core/api_error.hpp"
#include "core/services/health_service.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/app_context.hpp"
#include "gateway/json_response.hpp"

namespace agw::gateway::api {

awaitable<handler_result> healthz(request_context& ctx) {
  co_return json_response(http::status::ok, {{"status", "ok"}}, ctx.req.version());
}

awaitable<handler_result> readyz(request_context& ctx) {
  if (ctx.app.draining) throw core::api_error(core::error_code::unavailable, "draining");
  auto checking = ctx.app.health.check_writable();
  co_await std::move(checking);
  co_return json_response(http::status::ok, {{"status", "ready"}}, ctx.req.version());
}

awaitable<handler_result> metrics_text(request_context& ctx) {
  ctx.app.stats.store_rejected = ctx.app.health.rejected_jobs();
  response res{http::status::ok, ctx.req.version()};
  res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
  res.body() = ctx.app.stats.render();
  res.prepare_payload();
  co_return res;
}

}  // namespace agw::gateway::api
