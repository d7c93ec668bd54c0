// POST /sessions/{id}/chat and GET /sessions/{id}/chat/stream: the AI SDK's `useChat`
// (DefaultChatTransport) on the session's runs. The run is started by core::run_service
// exactly as POST /messages starts it (409, Idempotency-Key, abort, callbacks aside);
// only the request's shape and the stream's encoding (gateway/encodings/ui_message_stream)
// differ. The session's checkpoint stays authoritative: of the client's `messages`, only
// the newest user message's text is read, as the run's input.
#include "core/api_error.hpp"
#include "core/services/event_service.hpp"
#include "core/services/run_service.hpp"
#include "core/services/session_service.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/api/run_stream.hpp"
#include "gateway/app_context.hpp"
#include "gateway/encodings/shared_encoding.hpp"
#include "gateway/encodings/ui_message_stream.hpp"
#include "gateway/idempotency_header.hpp"
#include "gateway/request_body.hpp"

namespace agw::gateway::api {
namespace {

using core::api_error;
using core::error_code;

// The text of the newest user message of a DefaultChatTransport body: its `text`
// parts joined. Other fields the transport sends (`id`, `trigger`, `messageId`) are
// checked for their type and otherwise left to the session.
std::string chat_input(const request& req) {
  auto body = parse_json_body(req);
  if (!body.is_object()) throw api_error(error_code::bad_request, "request body must be a JSON object");
  const auto& o = body.get_object();
  for (const char* key : {"id", "trigger", "messageId"})
    if (const auto* v = o.if_contains(key); v && !v->is_null() && !v->is_string())
      throw api_error(error_code::bad_request, std::string(key) + " must be a string");
  if (const auto* t = o.if_contains("trigger");
      t && t->is_string() && t->get_string() != "submit-message" && t->get_string() != "regenerate-message")
    throw api_error(error_code::bad_request, "trigger must be submit-message or regenerate-message");
  const auto* messages = o.if_contains("messages");
  if (!messages || !messages->is_array() || messages->get_array().empty())
    throw api_error(error_code::bad_request, "messages must be a non-empty array of UI messages");
  for (auto it = messages->get_array().rbegin(); it != messages->get_array().rend(); ++it) {
    if (!it->is_object()) throw api_error(error_code::bad_request, "each message must be an object");
    const auto& m = it->get_object();
    const auto* role = m.if_contains("role");
    if (!role || !role->is_string()) throw api_error(error_code::bad_request, "each message needs a string role");
    if (role->get_string() != "user") continue;
    const auto* parts = m.if_contains("parts");
    if (!parts || !parts->is_array()) throw api_error(error_code::bad_request, "the user message's parts must be an array");
    std::string text;
    for (const auto& p : parts->get_array()) {
      if (!p.is_object()) throw api_error(error_code::bad_request, "each part must be an object");
      const auto& part = p.get_object();
      const auto* type = part.if_contains("type");
      if (!type || !type->is_string() || type->get_string() != "text") continue;
      const auto* t = part.if_contains("text");
      if (!t || !t->is_string()) throw api_error(error_code::bad_request, "a text part's text must be a string");
      text += t->get_string();
    }
    if (text.find_first_not_of(" \t\r\n\f\v") == std::string::npos)
      throw api_error(error_code::bad_request, "the newest user message must have non-empty text");
    return text;
  }
  throw api_error(error_code::bad_request, "messages must contain a user message");
}

stream_wire ui_message_wire() {
  stream_wire wire;
  // The chunks depend on the run's events only: one encoding per run for every chat stream of it.
  wire.make_encoder = [](const std::string& run_id) {
    return shared_encoder("ui-message-stream\n" + run_id, [] { return std::make_unique<ui_message_encoder>(); });
  };
  wire.headers = {{ui_message_stream_header, ui_message_stream_version}};
  wire.retry_line = false;  // the AI SDK reconnects by its own resume request, not EventSource's retry
  return wire;
}

}  // namespace

awaitable<handler_result> post_chat(request_context& ctx) {
  auto& app = ctx.app;
  auto finding = app.sessions.require(ctx.param(0));
  auto session = co_await std::move(finding);
  core::start_request message{chat_input(ctx.req), std::nullopt, idempotency_key_header(ctx.req)};
  message.request_id = ctx.request_id;
  if (app.draining) throw api_error(error_code::unavailable, "the server is draining; retry on another instance");
  const std::string session_id = session.id;
  auto starting = app.runs.start(std::move(session), std::move(message));
  auto started = co_await std::move(starting);
  co_return co_await stream_run(ctx, started.channel, session_id, started.run_id, started.after_id, ui_message_wire());
}

awaitable<handler_result> resume_chat_stream(request_context& ctx) {
  auto finding = ctx.app.events.channel(ctx.param(0));
  auto channel = co_await std::move(finding);
  co_return co_await stream_live_run(ctx, std::move(channel), ui_message_wire());
}

}  // namespace agw::gateway::api
