// GET /sessions/{id}/webhooks and POST /sessions/{id}/webhooks/{delivery_id}/redeliver
// (core::webhook_service); a redelivery wakes the dispatcher.
#include "core/api_error.hpp"
#include "core/services/webhook_service.hpp"
#include "core/webhooks/webhook_delivery.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/app_context.hpp"
#include "gateway/json_response.hpp"
#include "gateway/webhooks/webhook_dispatcher.hpp"

namespace agw::gateway::api {

using core::api_error;
using core::error_code;

awaitable<handler_result> list_webhooks(request_context& ctx) {
  if (!ctx.query.empty()) throw api_error(error_code::bad_request, "unknown query parameter '" + ctx.query.begin()->first + "'");
  auto listing = ctx.app.deliveries.list(ctx.param(0));
  auto deliveries = co_await std::move(listing);
  boost::json::array out;
  for (const auto& d : deliveries) out.push_back(core::webhook_delivery_json(d));
  co_return json_response(http::status::ok, {{"deliveries", std::move(out)}}, ctx.req.version());
}

awaitable<handler_result> redeliver_webhook(request_context& ctx) {
  auto requeueing = ctx.app.deliveries.redeliver(ctx.param(0), ctx.param(1));
  auto delivery = co_await std::move(requeueing);
  if (ctx.app.webhooks) ctx.app.webhooks->wake();
  co_return json_response(http::status::accepted, core::webhook_delivery_json(delivery), ctx.req.version());
}

}  // namespace agw::gateway::api
