#include "gateway/api/run_stream.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/write.hpp>
#include <charconv>
#include <sstream>

#include "core/api_error.hpp"
#include "core/events/sse_format.hpp"
#include "core/runs/run.hpp"
#include "core/services/event_service.hpp"
#include "gateway/app_context.hpp"
#include "gateway/cors.hpp"
#include "gateway/heartbeat_wheel.hpp"
#include "gateway/http_connection.hpp"
#include "gateway/json_response.hpp"
#include "gateway/sse_stream.hpp"

namespace agw::gateway::api {
namespace {

using core::api_error;
using core::error_code;

std::chrono::steady_clock::duration to_duration(std::chrono::duration<double> d) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
}

// How a stream starts and when it ends.
struct stream_plan {
  std::optional<std::int64_t> cursor;  // Last-Event-ID; none: live events only
  bool announce = false;               // send `reconnected` first
  enum class end { at_run_done, after_replay_or_live_run, never } ending = end::never;
  std::string run_id;          // for at_run_done
  bool from_live_run = false;  // the cursor is the live run's start (none live: no stream)
  stream_wire wire;            // the encoding
};

// The decision made on the channel's strand, where the live run and the last id are exact.
struct subscription {
  std::shared_ptr<sse_stream> stream;
  std::string run_id;  // the run the stream follows, if any
  bool cursor_beyond = false;
  bool no_live_run = false;  // from_live_run, and none is live
  std::int64_t last_event_id = 0;
};

// The response's status line and fields, as they go on the wire.
std::string header_text(const http::response<http::empty_body>& head) {
  std::ostringstream out;
  out << head.base();
  return out.str();
}

std::int64_t parse_cursor(std::string_view text) {
  // Digits only: from_chars alone would take a sign ("-0" is not an event id).
  if (text.empty() || text.front() < '0' || text.front() > '9')
    throw api_error(error_code::bad_request, "Last-Event-ID must be a non-negative integer");
  std::int64_t n = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end != text.data() + text.size() || n < 0)
    throw api_error(error_code::bad_request, "Last-Event-ID must be a non-negative integer");
  return n;
}

// Writes the response head and hands the socket to the subscribed stream.
void hand_over(request_context& ctx, const std::shared_ptr<core::session_channel>& channel, const std::string& session_id,
               const subscription& sub, const stream_wire& wire) {
  auto& app = ctx.app;
  http::response<http::empty_body> head{http::status::ok, ctx.req.version()};
  head.set(http::field::content_type, "text/event-stream");
  head.set(http::field::cache_control, "no-cache");
  head.set("X-Accel-Buffering", "no");
  head.set(http::field::content_location, "/sessions/" + session_id + "/events");
  if (!sub.run_id.empty()) head.set("X-Run-Id", sub.run_id);
  head.set("X-Request-Id", ctx.request_id);
  for (const auto& [name, value] : wire.headers) head.set(name, value);
  add_cors_headers(app.config, ctx.req, head.base());
  // HTTP/1.0 has no chunked coding: the body then ends when the connection closes.
  const bool chunked = ctx.req.version() >= 11;
  if (chunked) head.chunked(true);
  head.keep_alive(chunked && ctx.req.keep_alive());

  // The stream takes the socket over: this request's coroutine ends here, and with it
  // the connection's (an idle follower then costs only the stream). When the stream
  // ends it leaves the channel, and a cleanly ended one may serve the next request.
  std::string pending(static_cast<const char*>(ctx.buffer.data().data()), ctx.buffer.size());
  auto on_end = [channel, &app, keep_alive = head.keep_alive(), pending = std::move(pending)](
                    const std::shared_ptr<sse_stream>& stream, sse_stream::end_reason, net::ip::tcp::socket socket,
                    bool reusable) mutable {
    net::post(channel->strand(), [channel, stream] { channel->unsubscribe(stream.get()); });
    if (reusable && keep_alive && !app.draining)
      start_connection(std::move(socket), app, std::move(pending), /*counted=*/true);
    else
      close_connection(socket, app);
  };
  ctx.stream_taken = true;
  auto preamble = wire.retry_line ? core::retry_line(app.config.sse_retry_interval) : std::string();
  sub.stream->start(ctx.stream.release_socket(), header_text(head), std::move(preamble), chunked, std::move(on_end));
}

// Where the stream ends, by the plan: after the given run's done, after the replay (or
// the live run's done), or never.
void apply_ending(const stream_plan& plan, core::session_channel& channel, sse_stream::options& opts, subscription& out) {
  switch (plan.ending) {
    case stream_plan::end::at_run_done:
      opts.until_run = plan.run_id;
      out.run_id = plan.run_id;
      // A run that already ended ends its replay at the last event even if retention
      // dropped its done.
      if (auto live = channel.live_run(); !live || live->id() != plan.run_id) opts.until_id = out.last_event_id;
      break;
    case stream_plan::end::after_replay_or_live_run:
      if (auto live = channel.live_run()) {
        opts.until_run = live->id();
        out.run_id = live->id();
      } else {
        opts.until_id = out.last_event_id;
      }
      break;
    case stream_plan::end::never:
      break;
  }
}

awaitable<handler_result> open_stream(request_context& ctx, std::shared_ptr<core::session_channel> channel,
                                      const std::string& session_id, stream_plan plan) {
  auto& app = ctx.app;
  auto executor = co_await net::this_coro::executor;
  sse_stream::options opts;
  opts.heartbeat = to_duration(app.config.sse_heartbeat_interval);
  opts.write_timeout = to_duration(app.config.write_timeout);
  // One timer for every stream of this io_context (it lives as long as the context).
  auto* wheel = &heartbeat_wheel::of(executor, heartbeat_wheel::tick_for(opts.heartbeat, opts.write_timeout));

  auto decide = [channel, plan, opts, executor, wheel, &stats = app.stats]() mutable -> awaitable<subscription> {
    subscription out;
    out.last_event_id = channel->last_committed_id();
    // The stored last id moves with the commit, a moment before the channel releases the
    // batch: a client may already have read an id up to the last one assigned (GET
    // /sessions/{id}). Such a cursor is valid; the stream skips ids up to it.
    if (plan.from_live_run) {
      auto live = channel->live_run();
      if (!live) {
        out.no_live_run = true;
        co_return out;
      }
      plan.cursor = live->events_before();
      plan.run_id = live->id();
    }
    std::int64_t known = std::max(out.last_event_id, channel->last_assigned_id());
    if (plan.cursor && *plan.cursor > known) {
      // A cluster: the client may have seen these events on another node before this
      // one heard of them; the log decides (docs/scale-out.md, "Redis fan-out").
      auto following = channel->follow_log_end();
      co_await std::move(following);
      out.last_event_id = channel->last_committed_id();
      known = std::max(out.last_event_id, channel->last_assigned_id());
    }
    if (plan.cursor && *plan.cursor > known) {
      out.cursor_beyond = true;
      out.last_event_id = known;  // for the error message
      co_return out;
    }
    const std::int64_t after = plan.cursor.value_or(out.last_event_id);
    opts.after_id = after;
    apply_ending(plan, *channel, opts, out);
    if (plan.wire.make_encoder) opts.encoder = plan.wire.make_encoder(plan.run_id);
    out.stream = std::make_shared<sse_stream>(executor, stats, *wheel, opts);
    std::function<void(const core::replay_info&)> on_replay;
    if (plan.announce) {
      on_replay = [stream = out.stream](const core::replay_info& info) {
        stream->deliver_unnumbered(std::make_shared<const core::event_frame>(
            core::make_reconnected_frame(info.last_event_id, info.replayed, info.gap, info.oldest_event_id)));
      };
    }
    channel->subscribe(out.stream, after, std::move(on_replay));
    co_return out;
  };
  auto deciding = net::co_spawn(channel->strand(), decide(), net::use_awaitable);
  auto sub = co_await std::move(deciding);
  if (sub.no_live_run) co_return empty_response(http::status::no_content, ctx.req.version());
  if (sub.cursor_beyond)
    throw api_error(error_code::bad_request,
                    "Last-Event-ID is beyond the session's last event id " + std::to_string(sub.last_event_id));
  hand_over(ctx, channel, session_id, sub, plan.wire);
  co_return std::nullopt;
}

}  // namespace

awaitable<handler_result> stream_run(request_context& ctx, std::shared_ptr<core::session_channel> channel,
                                     const std::string& session_id, const std::string& run_id, std::int64_t after_id,
                                     stream_wire wire) {
  stream_plan plan;
  plan.wire = std::move(wire);
  plan.cursor = after_id;
  plan.ending = stream_plan::end::at_run_done;
  plan.run_id = run_id;
  co_return co_await open_stream(ctx, std::move(channel), session_id, plan);
}

awaitable<handler_result> stream_live_run(request_context& ctx, std::shared_ptr<core::session_channel> channel,
                                          stream_wire wire) {
  stream_plan plan;
  plan.from_live_run = true;
  plan.ending = stream_plan::end::at_run_done;
  plan.wire = std::move(wire);
  const std::string session_id = channel->session_id();
  co_return co_await open_stream(ctx, std::move(channel), session_id, std::move(plan));
}

awaitable<handler_result> resume_run_stream(request_context& ctx) {
  auto cursor = parse_cursor(ctx.req["Last-Event-ID"]);
  auto finding = ctx.app.events.channel(ctx.param(0));
  auto channel = co_await std::move(finding);
  stream_plan plan;
  plan.cursor = cursor;
  plan.announce = true;
  plan.ending = stream_plan::end::after_replay_or_live_run;
  co_return co_await open_stream(ctx, channel, channel->session_id(), plan);
}

awaitable<handler_result> follow_session_stream(request_context& ctx) {
  std::optional<std::int64_t> cursor;
  if (auto it = ctx.req.find("Last-Event-ID"); it != ctx.req.end()) cursor = parse_cursor(it->value());
  for (const auto& [k, v] : ctx.query)
    if (k == "last_event_id" && !cursor) cursor = parse_cursor(v);
  auto finding = ctx.app.events.channel(ctx.param(0));
  auto channel = co_await std::move(finding);
  stream_plan plan;
  plan.cursor = cursor;
  plan.announce = cursor.has_value();
  plan.ending = stream_plan::end::never;
  co_return co_await open_stream(ctx, channel, channel->session_id(), plan);
}

}  // namespace agw::gateway::api
