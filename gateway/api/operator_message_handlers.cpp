// POST /sessions/{id}/operator-messages: a human operator's answer (manual mode's,
// or any time no run is live), stored and delivered by core::timeline_service
// (docs/timeline.md). Here: the body's shape and the answer.
#include "core/api_error.hpp"
#include "core/checkpoint.hpp"
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

core::operator_message parse_operator_message(const request& req) {
  auto body = parse_json_body(req);
  if (!body.is_object()) throw api_error(error_code::bad_request, "request body must be a JSON object");
  const auto& o = body.get_object();
  const auto* content = o.if_contains("content");
  if (!content || !content->is_string() ||
      std::string_view(content->get_string()).find_first_not_of(" \t\r\n\f\v") == std::string_view::npos)
    throw api_error(error_code::bad_request, "content must be a non-empty string");
  core::operator_message out{std::string(content->get_string())};
  if (const auto* source = o.if_contains("source"); source && !source->is_null()) {
    const bool human = source->is_string() &&
                       (source->get_string() == "human_agent" || source->get_string() == "human_agent_on_behalf_of_ai_agent");
    if (!human) throw api_error(error_code::bad_request, "source must be human_agent or human_agent_on_behalf_of_ai_agent");
    out.source = *core::event_source_named(source->get_string());
  }
  if (const auto* stream = o.if_contains("stream"); stream && !stream->is_null()) {
    if (!stream->is_bool()) throw api_error(error_code::bad_request, "stream must be a boolean");
    out.stream = stream->get_bool();
  }
  return out;
}

}  // namespace

awaitable<handler_result> post_operator_message(request_context& ctx) {
  core::session_service::check_id(ctx.param(0));
  auto message = parse_operator_message(ctx.req);
  auto finding = ctx.app.sessions.require(ctx.param(0));
  auto session = co_await std::move(finding);
  auto posting = ctx.app.timeline->post_operator_message(std::move(session), std::move(message));
  auto reply = co_await std::move(posting);
  co_return json_response(http::status::created, {{"message", core::message_json(reply.message)}, {"run_id", reply.run_id}},
                          ctx.req.version());
}

}  // namespace agw::gateway::api
