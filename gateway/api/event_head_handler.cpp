// HEAD /sessions/{id}/events: the subscription's status and headers without
// opening a stream (the GET handler would take the socket over and follow the
// session). A missing session is the GET's 404; a long-poll HEAD (Accept JSON) is
// answered by the GET handler, whose body the connection drops.
#include <boost/algorithm/string/predicate.hpp>

#include "core/services/session_service.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/app_context.hpp"
#include "gateway/json_response.hpp"

namespace agw::gateway::api {

awaitable<handler_result> session_events_head(request_context& ctx) {
  // The long poll answers JSON: its HEAD is the GET's answer (the connection drops the body).
  const auto accept = ctx.req[http::field::accept];
  if (boost::algorithm::icontains(accept, "application/json") && !boost::algorithm::icontains(accept, "text/event-stream"))
    co_return co_await session_events(ctx);
  auto finding = ctx.app.sessions.require(ctx.param(0));
  auto session = co_await std::move(finding);
  auto res = empty_response(http::status::ok, ctx.req.version());
  res.set(http::field::content_type, "text/event-stream");
  res.set(http::field::cache_control, "no-cache");
  res.set(http::field::content_location, "/sessions/" + session.id + "/events");
  // The GET's body is chunked and open-ended: no length to announce.
  res.erase(http::field::content_length);
  co_return res;
}

}  // namespace agw::gateway::api
