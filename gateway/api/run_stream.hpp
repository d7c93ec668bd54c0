#pragma once
// Answers a request with an SSE stream of a session's events: a new run's
// stream, an idempotent retry attaching to a run, a POST resume
// (Last-Event-ID), and the GET /events subscription. All share one
// mechanism: subscribe to the session's channel after a cursor, then pump.
#include <memory>
#include <optional>
#include <string>

#include "core/runs/session_channel.hpp"
#include "gateway/encodings/frame_encoder.hpp"
#include "gateway/router.hpp"

namespace agw::gateway::api {

// The stream of run `run_id` from the event after `after_id` to its done: a new run's,
// or (an Idempotency-Key retry) that run's events from its start, replayed if it ended.
awaitable<handler_result> stream_run(request_context& ctx, std::shared_ptr<core::session_channel> channel,
                                     const std::string& session_id, const std::string& run_id, std::int64_t after_id);

// The same stream in another wire encoding (AG-UI): each frame goes through `encoder`
// (this stream's own), and no `retry:` line opens it.
awaitable<handler_result> stream_run_encoded(request_context& ctx, std::shared_ptr<core::session_channel> channel,
                                             const std::string& session_id, const std::string& run_id, std::int64_t after_id,
                                             std::shared_ptr<frame_encoder> encoder);

// POST /messages with Last-Event-ID: replay after N, then the live run to its done (or end).
awaitable<handler_result> resume_run_stream(request_context& ctx);

// GET /sessions/{id}/events as text/event-stream.
awaitable<handler_result> follow_session_stream(request_context& ctx);

}  // namespace agw::gateway::api
