// GET /sessions/{id}/events: the EventSource subscription, and with
// Accept: application/json the long-poll cursor for clients that cannot hold a
// stream open (`?after=N&wait=S&limit=L`).
#include <boost/algorithm/string/predicate.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <charconv>
#include <cmath>

#include "core/api_error.hpp"
#include "core/events/sse_format.hpp"
#include "core/session_hub.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/api/lookup.hpp"
#include "gateway/api/run_stream.hpp"
#include "gateway/app_context.hpp"
#include "gateway/json_response.hpp"

namespace agw::gateway::api {
namespace {

using core::api_error;
using core::error_code;

// Wakes a waiting long poll when the channel hands it anything (or closes).
// deliver()/close() run on the session strand and only post here.
class poll_waiter final : public core::subscriber, public std::enable_shared_from_this<poll_waiter> {
 public:
  explicit poll_waiter(net::any_io_executor executor) : executor_(executor), timer_(executor) {}
  void deliver(const core::frame_batch&) override { wake(); }
  void close(close_reason) override { wake(); }
  net::steady_timer& timer() { return timer_; }
  bool woken() const { return woken_; }

 private:
  void wake() {
    net::post(executor_, [self = shared_from_this()] {
      self->woken_ = true;
      self->timer_.cancel();
    });
  }
  net::any_io_executor executor_;
  net::steady_timer timer_;
  bool woken_ = false;
};

struct poll_query {
  std::int64_t after = 0;
  double wait_seconds = 0;
  std::int64_t limit = 100;
};

poll_query parse_poll_query(const core::query_params& query) {
  core::reject_duplicate_keys(query);
  poll_query q;
  for (const auto& [k, v] : query) {
    if (k == "after") {
      q.after = core::parse_offset(v);  // same rule: a non-negative integer
    } else if (k == "wait") {
      double seconds = -1;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
      if (v.empty() || ec != std::errc{} || end != v.data() + v.size() || !std::isfinite(seconds) || seconds < 0)
        throw api_error(error_code::bad_request, "wait must be a number of seconds from 0 to 60");
      q.wait_seconds = std::min(seconds, 60.0);
    } else if (k == "limit") {
      q.limit = core::parse_limit(v, 1000);
    } else if (k != "last_event_id") {
      throw api_error(error_code::bad_request, "unknown query parameter '" + k + "'");
    }
  }
  return q;
}

// The channel serves what it holds in memory (ring, journaled tail) and reads the log for the rest.
awaitable<std::vector<core::frame_ptr>> read_after(std::shared_ptr<core::session_channel> channel, std::int64_t after,
                                                  std::int64_t limit) {
  auto reading = net::co_spawn(channel->strand(), channel->read_after(after, static_cast<std::size_t>(limit)), net::use_awaitable);
  co_return co_await std::move(reading);
}

awaitable<handler_result> long_poll(request_context& ctx) {
  auto& app = ctx.app;
  const auto q = parse_poll_query(ctx.query);
  auto session = co_await find_session_or_404(app, ctx.param(0));
  auto channel = app.hub.channel(session.id, session.last_event_id);
  auto reading = read_after(channel, q.after, q.limit);
  auto events = co_await std::move(reading);
  if (events.empty() && q.wait_seconds > 0 && q.limit > 0) {
    // Subscribe first, then look again: an event committed in between wakes us either way.
    auto waiter = std::make_shared<poll_waiter>(co_await net::this_coro::executor);
    waiter->timer().expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(q.wait_seconds)));
    auto join = [channel, waiter, after = q.after]() -> awaitable<void> {
      channel->subscribe(waiter, after);
      co_return;
    };
    auto joining = net::co_spawn(channel->strand(), join(), net::use_awaitable);
    co_await std::move(joining);
    if (!waiter->woken()) co_await waiter->timer().async_wait(net::as_tuple(net::use_awaitable));
    auto leave = [channel, raw = waiter.get()]() -> awaitable<void> {
      channel->unsubscribe(raw);
      co_return;
    };
    auto leaving = net::co_spawn(channel->strand(), leave(), net::use_awaitable);
    co_await std::move(leaving);
    auto rereading = read_after(channel, q.after, q.limit);
    events = co_await std::move(rereading);
  }
  boost::json::array out;
  std::int64_t cursor = q.after;
  for (const auto& frame : events) {
    cursor = frame->id;
    out.push_back({{"id", frame->id}, {"event", frame->type()}, {"data", boost::json::parse(frame->data())}});
  }
  co_return json_response(http::status::ok, {{"events", std::move(out)}, {"last_event_id", cursor}}, ctx.req.version());
}

bool wants_json(const request& req) {
  auto accept = req[http::field::accept];
  return boost::algorithm::icontains(accept, "application/json") && !boost::algorithm::icontains(accept, "text/event-stream");
}

}  // namespace

awaitable<handler_result> session_events(request_context& ctx) {
  if (wants_json(ctx.req)) co_return co_await long_poll(ctx);
  co_return co_await follow_session_stream(ctx);
}

}  // namespace agw::gateway::api
