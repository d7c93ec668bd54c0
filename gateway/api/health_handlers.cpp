#include <boost/asio/use_awaitable.hpp>

#include "gateway/api/handlers.hpp"
#include "gateway/app_context.hpp"
#include "gateway/json_response.hpp"

namespace agw::gateway::api {

awaitable<handler_result> healthz(request_context& ctx) {
  co_return json_response(http::status::ok, {{"status", "ok"}}, ctx.req.version());
}

awaitable<handler_result> readyz(request_context& ctx) {
  if (ctx.app.draining) throw core::api_error(core::error_code::unavailable, "draining");
  // An empty write batch proves the writer thread is alive and can take the write lock.
  auto nothing = [](core::store_connection&) {};
  co_await ctx.app.store.async_write(nothing, net::use_awaitable);
  co_return json_response(http::status::ok, {{"status", "ready"}}, ctx.req.version());
}

awaitable<handler_result> metrics_text(request_context& ctx) {
  ctx.app.stats.store_rejected = ctx.app.store.rejected();
  response res{http::status::ok, ctx.req.version()};
  res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
  res.body() = ctx.app.stats.render();
  res.prepare_payload();
  co_return res;
}

}  // namespace agw::gateway::api
