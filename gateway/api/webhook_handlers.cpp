// GET /sessions/{id}/webhooks and POST /sessions/{id}/webhooks/{delivery_id}/redeliver.
#include <boost/asio/use_awaitable.hpp>

#include "core/api_error.hpp"
#include "core/time_format.hpp"
#include "core/webhooks/webhook_delivery.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/api/lookup.hpp"
#include "gateway/app_context.hpp"
#include "gateway/json_response.hpp"
#include "gateway/webhooks/webhook_dispatcher.hpp"

namespace agw::gateway::api {

using core::api_error;
using core::error_code;

awaitable<handler_result> list_webhooks(request_context& ctx) {
  if (!ctx.query.empty()) throw api_error(error_code::bad_request, "unknown query parameter '" + ctx.query.begin()->first + "'");
  auto session = co_await find_session_or_404(ctx.app, ctx.param(0));
  auto list = [id = session.id](core::store_connection& c) { return c.list_webhook_deliveries(id); };
  auto deliveries = co_await ctx.app.store.async_read(std::move(list), net::use_awaitable);
  boost::json::array out;
  for (const auto& d : deliveries) out.push_back(core::webhook_delivery_json(d));
  co_return json_response(http::status::ok, {{"deliveries", std::move(out)}}, ctx.req.version());
}

awaitable<handler_result> redeliver_webhook(request_context& ctx) {
  auto session = co_await find_session_or_404(ctx.app, ctx.param(0));
  // Check and requeue in one write job, so two racing redeliveries cannot both pass the check.
  struct requeued {
    std::optional<core::webhook_delivery_record> delivery;
    bool was_pending = false;
  };
  auto requeue = [id = session.id, delivery_id = ctx.param(1)](core::store_connection& c) {
    requeued out;
    out.delivery = c.find_webhook_delivery(id, delivery_id);
    if (!out.delivery) return out;
    if (out.delivery->status == "pending") {
      out.was_pending = true;
      return out;
    }
    c.requeue_webhook_delivery(delivery_id, core::now_ms());
    auto all = c.list_webhook_deliveries(id);
    for (auto& d : all)
      if (d.id == delivery_id) out.delivery = std::move(d);
    return out;
  };
  auto result = co_await ctx.app.store.async_write(std::move(requeue), net::use_awaitable);
  if (!result.delivery) throw api_error(error_code::not_found, "no such webhook delivery");
  if (result.was_pending) throw api_error(error_code::delivery_pending, "this delivery is still pending; it will be attempted again");
  if (ctx.app.webhooks) ctx.app.webhooks->wake();
  co_return json_response(http::status::accepted, core::webhook_delivery_json(*result.delivery), ctx.req.version());
}

}  // namespace agw::gateway::api
