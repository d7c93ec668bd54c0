// /sessions and /sessions/{id}: create, list, get, patch, delete.
#include <boost/asio/use_awaitable.hpp>

#include "core/ids.hpp"
#include "core/session_hub.hpp"
#include "core/time_format.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/api/lookup.hpp"
#include "gateway/app_context.hpp"
#include "gateway/json_response.hpp"
#include "gateway/request_body.hpp"

namespace agw::gateway::api {

awaitable<handler_result> create_session(request_context& ctx) {
  auto s = core::parse_session_create(parse_optional_json_body(ctx.req));
  s.id = core::new_uuid();
  s.thread_id = core::new_uuid();
  s.created_at_ms = s.updated_at_ms = core::now_ms();
  auto insert = [s](core::store_connection& c) { c.insert_session(s); };
  co_await ctx.app.store.async_write(std::move(insert), net::use_awaitable);
  co_return json_response(http::status::created, core::to_json(s, std::nullopt), ctx.req.version());
}

awaitable<handler_result> list_sessions(request_context& ctx) {
  auto filter = core::parse_session_filter(ctx.query);
  auto list = [filter](core::store_connection& c) { return c.list_sessions(filter); };
  auto page = co_await ctx.app.store.async_read(std::move(list), net::use_awaitable);
  boost::json::array sessions;
  for (const auto& s : page.sessions) sessions.push_back(session_json(ctx.app, s));
  co_return json_response(http::status::ok,
                          {{"sessions", std::move(sessions)}, {"total", page.total}, {"limit", filter.limit}, {"offset", filter.offset}},
                          ctx.req.version());
}

awaitable<handler_result> get_session(request_context& ctx) {
  auto s = co_await find_session_or_404(ctx.app, ctx.param(0));
  co_return json_response(http::status::ok, session_json(ctx.app, s), ctx.req.version());
}

awaitable<handler_result> patch_session(request_context& ctx) {
  const auto& id = ctx.param(0);
  if (!core::is_uuid(id)) throw core::api_error(core::error_code::not_found, "no such session");
  auto body = parse_json_body(ctx.req);
  // Validate before touching storage, then apply to the current row inside the write
  // transaction so concurrent PATCHes of different fields do not undo each other.
  core::session_record probe;
  core::apply_session_patch(body, probe);
  auto patch = [id, body](core::store_connection& c) -> std::optional<core::session_record> {
    auto s = c.find_session(id);
    if (!s) return std::nullopt;
    core::apply_session_patch(body, *s);
    s->updated_at_ms = core::now_ms();
    c.update_session(*s);
    return s;
  };
  auto updated = co_await ctx.app.store.async_write(std::move(patch), net::use_awaitable);
  if (!updated) throw core::api_error(core::error_code::not_found, "no such session");
  co_return json_response(http::status::ok, session_json(ctx.app, *updated), ctx.req.version());
}

awaitable<handler_result> delete_session(request_context& ctx) {
  const auto& id = ctx.param(0);
  if (!core::is_uuid(id)) throw core::api_error(core::error_code::not_found, "no such session");
  auto remove = [id](core::store_connection& c) { return c.delete_session(id); };
  bool deleted = co_await ctx.app.store.async_write(std::move(remove), net::use_awaitable);
  if (!deleted) throw core::api_error(core::error_code::not_found, "no such session");
  ctx.app.hub.session_deleted(id);
  co_return empty_response(http::status::no_content, ctx.req.version());
}

}  // namespace agw::gateway::api
