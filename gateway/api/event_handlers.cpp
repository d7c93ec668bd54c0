// GET /sessions/{id}/events: the EventSource subscription, and with
// Accept: application/json the long-poll cursor for clients that cannot hold a
// stream open (`?after=N&wait=S&limit=L`; the waiting is core::event_service's).
#include <boost/algorithm/string/predicate.hpp>
#include <boost/json/parse.hpp>
#include <charconv>
#include <cmath>

#include "core/api_error.hpp"
#include "core/services/event_service.hpp"
#include "core/session_request.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/api/run_stream.hpp"
#include "gateway/app_context.hpp"
#include "gateway/json_response.hpp"

namespace agw::gateway::api {
namespace {

using core::api_error;
using core::error_code;

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

awaitable<handler_result> long_poll(request_context& ctx) {
  const auto q = parse_poll_query(ctx.query);
  const std::chrono::duration<double> wait(q.wait_seconds);
  auto reading = ctx.app.events.read_after(ctx.param(0), q.after, static_cast<std::size_t>(q.limit), wait);
  auto events = co_await std::move(reading);
  boost::json::array out;
  std::int64_t cursor = q.after;
  for (const auto& frame : events) {
    cursor = frame->id;
    out.push_back({{"id", frame->id}, {"event", frame->type_name()}, {"data", boost::json::parse(frame->data())}});
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
