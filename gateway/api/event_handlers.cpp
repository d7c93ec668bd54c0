// GET /sessions/{id}/events: the EventSource subscription (and, with
// Accept: application/json, the long-poll cursor).
#include "gateway/api/handlers.hpp"
#include "gateway/api/run_stream.hpp"

namespace agw::gateway::api {

awaitable<handler_result> session_events(request_context& ctx) { co_return co_await follow_session_stream(ctx); }

}  // namespace agw::gateway::api
