// /sessions and /sessions/{id}: create, list, get, patch, delete (core::session_service).
#include "core/services/session_service.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/app_context.hpp"
#include "gateway/auth/tenant_scope.hpp"
#include "gateway/json_response.hpp"
#include "gateway/request_body.hpp"

namespace agw::gateway::api {
namespace {

boost::json::object session_json(const core::session_view& v) { return core::to_json(v.session, v.run); }

}  // namespace

awaitable<handler_result> create_session(request_context& ctx) {
  auto body = parse_optional_json_body(ctx.req);
  if (ctx.tenant) auth::stamp_tenant(body, *ctx.tenant);
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
