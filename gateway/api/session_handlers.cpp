// /sessions and /sessions/{id}: create, list, get, patch, delete (core::session_service).
#include <variant>

#include "core/api_error.hpp"
#include "core/services/session_service.hpp"
#include "core/webhooks/callback_target.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/app_context.hpp"
#include "gateway/auth/tenant_scope.hpp"
#include "gateway/json_response.hpp"
#include "gateway/request_body.hpp"
#include "gateway/webhooks/outbound_http.hpp"
#include "gateway/webhooks/webhook_dispatcher.hpp"

namespace agw::gateway::api {
namespace {

using core::api_error;
using core::error_code;

boost::json::object session_json(const core::session_view& v) { return core::to_json(v.session, v.run); }

// The SSRF guard for a body's event_webhook_url, as for a message's callback_url
// (docs/webhooks.md): its shape, then every address its host resolves to. The
// dispatcher checks again on the address it connects to.
awaitable<void> check_event_webhook_url(app_context& app, const boost::json::value& body) {
  const auto* o = body.if_object();
  const auto* url = o ? o->if_contains("event_webhook_url") : nullptr;
  if (!url || !url->is_string()) co_return;  // absent, null, or refused by the service's validation
  auto parsed = core::parse_callback_url(url->get_string());
  if (auto* why = std::get_if<std::string>(&parsed)) throw api_error(error_code::bad_request, "event_webhook_url: " + *why);
  if (!app.webhooks) throw api_error(error_code::unavailable, "webhooks are not available");
  const auto timeout = std::chrono::duration_cast<std::chrono::steady_clock::duration>(app.config.webhook_connect_timeout);
  auto resolving = resolve_callback_target(std::get<core::callback_target>(parsed), app.webhooks->policy(), timeout);
  auto resolved = co_await std::move(resolving);
  if (!resolved.refusal.empty()) throw api_error(error_code::bad_request, "event_webhook_url refused: " + resolved.refusal);
}

}  // namespace

awaitable<handler_result> create_session(request_context& ctx) {
  auto body = parse_optional_json_body(ctx.req);
  if (ctx.tenant) auth::stamp_tenant(body, *ctx.tenant);
  auto checking = check_event_webhook_url(ctx.app, body);
  co_await std::move(checking);
  auto creating = ctx.app.sessions.create(std::move(body));
  auto created = co_await std::move(creating);
  co_return json_response(http::status::created, session_json(created), ctx.req.version());
}

awaitable<handler_result> list_sessions(request_context& ctx) {
  auto filter = core::parse_session_filter(ctx.query);
  if (ctx.tenant) auth::restrict_to_tenant(filter, *ctx.tenant);
  auto listing = ctx.app.sessions.list(filter);
  auto page = co_await std::move(listing);
  boost::json::array sessions;
  for (const auto& s : page.sessions) sessions.push_back(session_json(s));
  co_return json_response(
      http::status::ok,
      {{"sessions", std::move(sessions)}, {"total", page.total}, {"limit", filter.limit}, {"offset", filter.offset}},
      ctx.req.version());
}

awaitable<handler_result> get_session(request_context& ctx) {
  auto getting = ctx.app.sessions.get(ctx.param(0));
  auto s = co_await std::move(getting);
  co_return json_response(http::status::ok, session_json(s), ctx.req.version());
}

awaitable<handler_result> patch_session(request_context& ctx) {
  // An id that cannot exist is a 404 before the body is even read.
  core::session_service::check_id(ctx.param(0));
  auto body = parse_json_body(ctx.req);
  auto checking = check_event_webhook_url(ctx.app, body);
  co_await std::move(checking);
  auto patching = ctx.app.sessions.patch(ctx.param(0), std::move(body));
  auto updated = co_await std::move(patching);
  co_return json_response(http::status::ok, session_json(updated), ctx.req.version());
}

awaitable<handler_result> delete_session(request_context& ctx) {
  auto removing = ctx.app.sessions.remove(ctx.param(0));
  co_await std::move(removing);
  co_return empty_response(http::status::no_content, ctx.req.version());
}

}  // namespace agw::gateway::api
