// GET /healthz, /readyz, /metrics.
#include "core/api_error.hpp"
#include "core/services/health_service.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/app_context.hpp"
#include "gateway/json_response.hpp"
#include "gateway/metrics_exporter.hpp"

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
  response res{http::status::ok, ctx.req.version()};
  res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
  res.body() = render_metrics(ctx.app);
  res.prepare_payload();
  co_return res;
}

}  // namespace agw::gateway::api
