// POST/GET /sessions/{id}/messages, POST /sessions/{id}/abort, POST /sessions/{id}/rebuild.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>
#include <spdlog/spdlog.h>

#include "core/content_hash.hpp"
#include "core/ids.hpp"
#include "core/projection.hpp"
#include "core/runs/run.hpp"
#include "core/runs/run_driver.hpp"
#include "core/session_hub.hpp"
#include "core/time_format.hpp"
#include "core/webhooks/callback_target.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/api/lookup.hpp"
#include "gateway/api/run_stream.hpp"
#include "gateway/app_context.hpp"
#include "gateway/json_response.hpp"
#include "gateway/request_body.hpp"
#include "gateway/webhooks/webhook_dispatcher.hpp"

namespace agw::gateway::api {
namespace {

using core::api_error;
using core::error_code;

constexpr std::int64_t idempotency_ttl_ms = 24 * 3600 * 1000;

struct message_request {
  std::string content;
  std::optional<std::string> callback_url;
};

message_request parse_message_request(const request& req) {
  auto body = parse_json_body(req);
  if (!body.is_object()) throw api_error(error_code::bad_request, "request body must be a JSON object");
  const auto& o = body.get_object();
  const auto* content = o.if_contains("content");
  if (!content || !content->is_string()) throw api_error(error_code::bad_request, "content must be a non-empty string");
  std::string text(content->get_string());
  if (text.find_first_not_of(" \t\r\n\f\v") == std::string::npos)
    throw api_error(error_code::bad_request, "content must be a non-empty string");
  message_request out{std::move(text), std::nullopt};
  if (const auto* cb = o.if_contains("callback_url"); cb && !cb->is_null()) {
    if (!cb->is_string() || cb->get_string().empty()) throw api_error(error_code::bad_request, "callback_url must be a URL string");
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

std::optional<std::string> idempotency_key(const request& req) {
  auto it = req.find("Idempotency-Key");
  if (it == req.end()) return std::nullopt;
  std::string key(it->value());
  if (key.empty() || key.size() > 255) throw api_error(error_code::bad_request, "Idempotency-Key must be 1 to 255 characters");
  for (unsigned char c : key)
    if (c < 0x21 || c > 0x7e) throw api_error(error_code::bad_request, "Idempotency-Key must be printable ASCII");
  return key;
}

api_error conflict(const std::string& session_id, const std::string& run_id) {
  return api_error(error_code::run_in_progress, "a run is already live on this session",
                   {{"run_id", run_id}, {"stream_url", "/sessions/" + session_id + "/events"}});
}

// Result of trying to reserve the session for a new run, on the channel's strand.
struct reservation {
  std::shared_ptr<core::run> created;  // set when this request owns the new run
  std::string live_run_id;             // set when another run is live
};

// What the user message's write job returns.
struct started_run {
  core::conversation_state conversation;
  std::int64_t checkpoint_version = 0;
  std::optional<core::idempotency_record> existing_key;  // a concurrent POST won the same key
};

// The key's row, waiting briefly for a concurrent POST's user-message commit to land.
awaitable<std::optional<core::idempotency_record>> wait_for_key(app_context& app, const std::string& session_id,
                                                                const std::string& key) {
  net::steady_timer pause(co_await net::this_coro::executor);
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto find_key = [session_id, key](core::store_connection& c) { return c.find_idempotency_key(session_id, key); };
    auto found = co_await app.store.async_read(std::move(find_key), net::use_awaitable);
    if (found) co_return found;
    pause.expires_after(std::chrono::milliseconds(10));
    co_await pause.async_wait(net::as_tuple(net::use_awaitable));
  }
  co_return std::nullopt;
}

}  // namespace

awaitable<handler_result> post_message(request_context& ctx) {
  auto& app = ctx.app;
  if (auto resume = ctx.req.find("Last-Event-ID"); resume != ctx.req.end()) co_return co_await resume_run_stream(ctx);
  auto session = co_await find_session_or_404(app, ctx.param(0));
  auto message = parse_message_request(ctx.req);
  auto key = idempotency_key(ctx.req);
  if (app.draining) throw api_error(error_code::unavailable, "the server is draining; retry on another instance");
  if (message.callback_url) {
    auto checking = check_callback_url(app, *message.callback_url);
    co_await std::move(checking);
  }
  const std::string hash = core::content_hash(message.content);

  if (key) {
    auto find_key = [id = session.id, k = *key](core::store_connection& c) { return c.find_idempotency_key(id, k); };
    auto found = co_await app.store.async_read(std::move(find_key), net::use_awaitable);
    if (found && found->created_at_ms >= core::now_ms() - idempotency_ttl_ms) {
      if (found->content_hash != hash)
        throw api_error(error_code::idempotency_mismatch, "this Idempotency-Key was used with different content");
      co_return co_await attach_run_stream(ctx, session, found->run_id, found->first_event_id);
    }
  }

  auto channel = app.hub.channel(session.id, session.last_event_id);
  auto reserve = [channel, started = core::now_ms()]() -> awaitable<reservation> {
    if (auto live = channel->live_run()) co_return reservation{nullptr, live->id()};
    auto r = std::make_shared<core::run>(channel->strand(), core::new_uuid(), started, channel->last_assigned_id());
    channel->set_live_run(r);
    co_return reservation{r, ""};
  };
  auto reserving = net::co_spawn(channel->strand(), reserve(), net::use_awaitable);
  auto reserved = co_await std::move(reserving);
  if (!reserved.created) {
    // A retry racing its original (same key, sent before the original's key row
    // committed) attaches to it rather than meeting the 409.
    if (key) {
      auto attach = co_await wait_for_key(app, session.id, *key);
      if (attach) {
        if (attach->content_hash != hash)
          throw api_error(error_code::idempotency_mismatch, "this Idempotency-Key was used with different content");
        co_return co_await attach_run_stream(ctx, session, attach->run_id, attach->first_event_id);
      }
    }
    throw conflict(session.id, reserved.live_run_id);
  }
  auto run = reserved.created;

  // The user message is durable (checkpoint + projection + idempotency key) before any byte of the answer.
  core::message_record user;
  user.id = core::new_uuid();
  user.session_id = session.id;
  user.role = "user";
  user.content = message.content;
  user.created_at_ms = core::now_ms();
  auto persist = [session, user, run_id = run->id(), started = run->started_at_ms(), first = run->events_before(), key, hash,
                  callback_url = message.callback_url](core::store_connection& c) {
    started_run out;
    if (key) {
      if (auto existing = c.find_idempotency_key(session.id, *key)) {
        out.existing_key = existing;
        return out;
      }
      c.purge_idempotency_keys(core::now_ms() - idempotency_ttl_ms);
      c.insert_idempotency_key({session.id, *key, hash, run_id, first, core::now_ms()});
    }
    if (auto cp = c.latest_checkpoint(session.thread_id)) {
      out.conversation = core::parse_checkpoint(cp->state, session.id);
      out.checkpoint_version = cp->version;
    }
    out.conversation.messages.push_back(user);
    out.conversation.messages.back().seq = static_cast<std::int64_t>(out.conversation.messages.size());
    out.conversation.run = core::checkpoint_run{run_id, "running", user.id, started, std::nullopt, first, callback_url};
    core::save_checkpoint(c, session, ++out.checkpoint_version, out.conversation, out.conversation.messages.size() - 1);
    return out;
  };
  std::exception_ptr persist_error;
  started_run started;
  try {
    started = co_await app.store.async_write(std::move(persist), net::use_awaitable);
  } catch (...) {
    persist_error = std::current_exception();
  }
  if (persist_error || started.existing_key) {
    // Nothing was stored for this request: give the session back.
    auto release = [channel, run]() -> awaitable<void> {
      if (channel->live_run() == run) channel->set_live_run(nullptr);
      co_return;
    };
    auto releasing = net::co_spawn(channel->strand(), release(), net::use_awaitable);
    co_await std::move(releasing);
    if (persist_error) std::rethrow_exception(persist_error);
    if (started.existing_key->content_hash != hash)
      throw api_error(error_code::idempotency_mismatch, "this Idempotency-Key was used with different content");
    co_return co_await attach_run_stream(ctx, session, started.existing_key->run_id, started.existing_key->first_event_id);
  }

  core::run_request request{session, std::move(started.conversation), started.checkpoint_version, message.callback_url, nullptr};
  if (auto* dispatcher = app.webhooks) request.outbox_written = [dispatcher] { dispatcher->wake(); };
  auto driver = core::drive_run(channel, run, std::move(request), app.hub.agent_for(session), app.hub.tools(), app.stats);
  net::co_spawn(channel->strand(), std::move(driver), [run_id = run->id()](std::exception_ptr e) {
    if (e) spdlog::error("run {} ended by an unexpected exception", run_id);
  });
  co_return co_await stream_run(ctx, channel, session.id, run->id(), run->events_before());
}

awaitable<handler_result> list_messages(request_context& ctx) {
  core::reject_duplicate_keys(ctx.query);
  std::int64_t limit = 50, offset = 0;
  for (const auto& [k, v] : ctx.query) {
    if (k == "limit") limit = core::parse_limit(v, 500);
    else if (k == "offset") offset = core::parse_offset(v);
    else throw api_error(error_code::bad_request, "unknown query parameter '" + k + "'");
  }
  auto session = co_await find_session_or_404(ctx.app, ctx.param(0));
  auto list = [id = session.id, limit, offset](core::store_connection& c) { return c.list_messages(id, limit, offset); };
  auto page = co_await ctx.app.store.async_read(std::move(list), net::use_awaitable);
  boost::json::array messages;
  for (const auto& m : page.messages) messages.push_back(core::message_json(m));
  const bool has_more = offset + static_cast<std::int64_t>(page.messages.size()) < page.total;
  co_return json_response(http::status::ok,
                          {{"messages", std::move(messages)}, {"total", page.total}, {"limit", limit}, {"offset", offset}, {"has_more", has_more}},
                          ctx.req.version());
}

awaitable<handler_result> abort_run(request_context& ctx) {
  auto session = co_await find_session_or_404(ctx.app, ctx.param(0));
  auto channel = ctx.app.hub.find(session.id);
  std::string run_id;
  if (channel) {
    auto request_abort = [channel]() -> awaitable<std::string> {
      auto live = channel->live_run();
      // A run whose end is already decided is as good as idle.
      if (!live || !live->request_abort()) co_return std::string();
      co_return live->id();
    };
    auto aborting = net::co_spawn(channel->strand(), request_abort(), net::use_awaitable);
    run_id = co_await std::move(aborting);
  }
  if (run_id.empty()) co_return json_response(http::status::ok, {{"status", "idle"}}, ctx.req.version());
  co_return json_response(http::status::ok, {{"status", "aborting"}, {"run_id", run_id}}, ctx.req.version());
}

awaitable<handler_result> rebuild_messages(request_context& ctx) {
  auto session = co_await find_session_or_404(ctx.app, ctx.param(0));
  auto rebuild = [id = session.id](core::store_connection& c) { return core::rebuild_projection(c, id); };
  auto count = co_await ctx.app.store.async_write(std::move(rebuild), net::use_awaitable);
  if (!count) throw api_error(error_code::not_found, "no such session");
  co_return json_response(http::status::ok, {{"messages", *count}}, ctx.req.version());
}

}  // namespace agw::gateway::api
