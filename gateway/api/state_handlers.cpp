// /sessions/{id}/state: the merged state scopes (core::state_service).
#include "core/services/session_service.hpp"
#include "core/services/state_service.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/app_context.hpp"
#include "gateway/json_response.hpp"
#include "gateway/request_body.hpp"

namespace agw::gateway::api {

awaitable<handler_result> get_session_state(request_context& ctx) {
  auto reading = ctx.app.state->get(ctx.param(0));
  auto state = co_await std::move(reading);
  co_return json_response(http::status::ok, std::move(state), ctx.req.version());
}

awaitable<handler_result> patch_session_state(request_context& ctx) {
  // An id that cannot exist is a 404 before the body is even read.
  core::session_service::check_id(ctx.param(0));
  auto body = parse_json_body(ctx.req);
  auto patching = ctx.app.state->patch(ctx.param(0), std::move(body));
  auto state = co_await std::move(patching);
  co_return json_response(http::status::ok, std::move(state), ctx.req.version());
}

}  // namespace agw::gateway::api
