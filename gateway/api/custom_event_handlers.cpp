// POST /sessions/{id}/events: a custom event into the session's sequence
// (core::timeline_service; docs/timeline.md). Here: the body's shape and the answer.
#include <boost/json/serialize.hpp>

#include "core/api_error.hpp"
#include "core/services/session_service.hpp"
#include "core/services/timeline_service.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/app_context.hpp"
#include "gateway/json_response.hpp"
#include "gateway/request_body.hpp"

namespace agw::gateway::api {
namespace {

using core::api_error;
using core::error_code;

core::custom_event parse_custom_event(const request& req) {
  auto body = parse_json_body(req);
  if (!body.is_object()) throw api_error(error_code::bad_request, "request body must be a JSON object");
  const auto& o = body.get_object();
  const auto* type = o.if_contains("type");
  if (!type || !type->is_string() || type->get_string() != "custom")
    throw api_error(error_code::bad_request, "type must be \"custom\"");
  const auto* data = o.if_contains("data");
  if (!data || !data->is_object()) throw api_error(error_code::bad_request, "data must be an object");
  if (boost::json::serialize(*data).size() > core::timeline_service::max_custom_data_bytes)
    throw api_error(error_code::payload_too_large,
                    "data must be at most " + std::to_string(core::timeline_service::max_custom_data_bytes) + " bytes of JSON");
  core::custom_event out{data->get_object()};
  if (const auto* source = o.if_contains("source"); source && !source->is_null()) {
    auto named = source->is_string() ? core::event_source_named(source->get_string()) : std::nullopt;
    if (!named)
      throw api_error(error_code::bad_request,
                      "source must be one of customer, customer_ui, ai_agent, human_agent, "
                      "human_agent_on_behalf_of_ai_agent, system");
    out.source = *named;
  }
  return out;
}

}  // namespace

awaitable<handler_result> post_custom_event(request_context& ctx) {
  core::session_service::check_id(ctx.param(0));
  auto event = parse_custom_event(ctx.req);
  auto finding = ctx.app.sessions.require(ctx.param(0));
  auto session = co_await std::move(finding);
  const auto source = event.source;
  const std::string session_id = session.id;
  auto appending = ctx.app.timeline->append_custom(std::move(session), std::move(event));
  const auto id = co_await std::move(appending);
  co_return json_response(
      http::status::created,
      {{"id", id}, {"type", "custom"}, {"source", core::name_of(source)}, {"stream_url", "/sessions/" + session_id + "/events"}},
      ctx.req.version());
}

}  // namespace agw::gateway::api
