// POST/GET /sessions/{id}/messages, POST /sessions/{id}/abort, POST /sessions/{id}/rebuild.
// The use cases are core::run_service and core::message_service; here: the request's
// HTTP shape, the callback URL's address check (DNS is the gateway's) and the answer.
#include "core/checkpoint.hpp"
#include "core/runs/multitask.hpp"
#include "core/services/message_service.hpp"
#include "core/services/run_service.hpp"
#include "core/services/session_service.hpp"
#include "core/webhooks/callback_target.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/api/run_stream.hpp"
#include "gateway/app_context.hpp"
#include "gateway/idempotency_header.hpp"
#include "gateway/json_response.hpp"
#include "gateway/request_body.hpp"
#include "gateway/webhooks/webhook_dispatcher.hpp"

namespace agw::gateway::api {
namespace {

using core::api_error;
using core::error_code;

// The body's content and callback_url (validated), then the Idempotency-Key header.
core::start_request parse_message_request(const request& req) {
  auto body = parse_json_body(req);
  if (!body.is_object()) throw api_error(error_code::bad_request, "request body must be a JSON object");
  const auto& o = body.get_object();
  const auto* content = o.if_contains("content");
  if (!content || !content->is_string()) throw api_error(error_code::bad_request, "content must be a non-empty string");
  std::string text(content->get_string());
  if (text.find_first_not_of(" \t\r\n\f\v") == std::string::npos)
    throw api_error(error_code::bad_request, "content must be a non-empty string");
  core::start_request out{std::move(text), std::nullopt, std::nullopt};
  out.may_hold = true;  // this handler answers a queued or held message with 202
  if (const auto* m = o.if_contains("multitask"); m && !m->is_null()) {
    auto named = m->is_string() ? core::multitask_named(m->get_string()) : std::nullopt;
    if (!named) throw api_error(error_code::bad_request, "multitask must be \"reject\", \"enqueue\" or \"interrupt\"");
    out.policy = *named;
  }
  if (const auto* cb = o.if_contains("callback_url"); cb && !cb->is_null()) {
    if (!cb->is_string() || cb->get_string().empty())
      throw api_error(error_code::bad_request, "callback_url must be a URL string");
    out.callback_url = std::string(cb->get_string());
  }
  return out;
}

// The SSRF guard at POST time: the URL's shape, then every address its host resolves
// to. (The dispatcher checks again on the address it connects to.)
awaitable<void> check_callback_url(app_context& app, const std::string& url) {
  auto parsed = core::parse_callback_url(url);
  if (auto* why = std::get_if<std::string>(&parsed)) throw api_error(error_code::bad_request, *why);
  const auto& target = std::get<core::callback_target>(parsed);
  if (!app.webhooks) throw api_error(error_code::unavailable, "callbacks are not available");
  const auto timeout = std::chrono::duration_cast<std::chrono::steady_clock::duration>(app.config.webhook_connect_timeout);
  auto resolving = resolve_callback_target(target, app.webhooks->policy(), timeout);
  auto resolved = co_await std::move(resolving);
  // Any forbidden address refuses the URL: a host that mixes public and private answers is suspect.
  if (!resolved.refusal.empty()) throw api_error(error_code::bad_request, "callback_url refused: " + resolved.refusal);
}

}  // namespace

awaitable<handler_result> post_message(request_context& ctx) {
  auto& app = ctx.app;
  if (auto resume = ctx.req.find("Last-Event-ID"); resume != ctx.req.end()) co_return co_await resume_run_stream(ctx);
  auto finding = app.sessions.require(ctx.param(0));
  auto session = co_await std::move(finding);
  auto message = parse_message_request(ctx.req);
  message.idempotency_key = idempotency_key_header(ctx.req);
  message.request_id = ctx.request_id;
  if (app.draining) throw api_error(error_code::unavailable, "the server is draining; retry on another instance");
  if (message.callback_url) {
    auto checking = check_callback_url(app, *message.callback_url);
    co_await std::move(checking);
  }
  const std::string session_id = session.id;
  auto starting = app.runs.start(std::move(session), std::move(message));
  auto started = co_await std::move(starting);
  if (!started.held.empty()) {
    // No run started for this message: where it went, and where its answer will stream.
    boost::json::object held{
        {"status", started.held}, {"message_id", started.message_id}, {"stream_url", "/sessions/" + session_id + "/events"}};
    if (started.held == "queued") {
      held["run_id"] = started.run_id.empty() ? boost::json::value(nullptr) : boost::json::value(started.run_id);
      held["queued"] = started.queued;
    }
    co_return json_response(http::status::accepted, held, ctx.req.version());
  }
  co_return co_await stream_run(ctx, started.channel, session_id, started.run_id, started.after_id);
}

awaitable<handler_result> list_messages(request_context& ctx) {
  core::reject_duplicate_keys(ctx.query);
  std::int64_t limit = 50, offset = 0;
  for (const auto& [k, v] : ctx.query) {
    if (k == "limit")
      limit = core::parse_limit(v, 500);
    else if (k == "offset")
      offset = core::parse_offset(v);
    else
      throw api_error(error_code::bad_request, "unknown query parameter '" + k + "'");
  }
  auto listing = ctx.app.messages.list(ctx.param(0), limit, offset);
  auto list = co_await std::move(listing);
  boost::json::array messages;
  for (const auto& m : list.page.messages) messages.push_back(core::message_json(m));
  co_return json_response(http::status::ok,
                          {{"messages", std::move(messages)},
                           {"total", list.page.total},
                           {"limit", limit},
                           {"offset", offset},
                           {"has_more", list.has_more}},
                          ctx.req.version());
}

awaitable<handler_result> abort_run(request_context& ctx) {
  auto aborting = ctx.app.runs.abort(ctx.param(0));
  auto run_id = co_await std::move(aborting);
  if (!run_id) co_return json_response(http::status::ok, {{"status", "idle"}}, ctx.req.version());
  co_return json_response(http::status::ok, {{"status", "aborting"}, {"run_id", *run_id}}, ctx.req.version());
}

awaitable<handler_result> rebuild_messages(request_context& ctx) {
  auto rebuilding = ctx.app.messages.rebuild(ctx.param(0));
  auto count = co_await std::move(rebuilding);
  co_return json_response(http::status::ok, {{"messages", count}}, ctx.req.version());
}

}  // namespace agw::gateway::api
