#pragma once
// Answers a request with an SSE stream of a session's events: a new run's
// stream, an idempotent retry attaching to a run, a POST resume
// (Last-Event-ID), and the GET /events subscription. All share one
// mechanism: subscribe to the session's channel after a cursor, then pump.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/runs/session_channel.hpp"
#include "gateway/encodings/frame_encoder.hpp"
#include "gateway/router.hpp"

namespace agw::gateway::api {

// How a stream is written: by default the contract's SSE; a front end's protocol (AG-UI,
// the AI SDK's UI message stream) gives its encoder, its response fields and no retry line.
struct stream_wire {
  // One per stream, given the run it follows (shared_encoder: one encoding per run and
  // encoding, gateway/encodings/shared_encoding.hpp); none: the contract's SSE.
  std::function<std::shared_ptr<frame_encoder>(const std::string& run_id)> make_encoder;
  std::vector<std::pair<std::string, std::string>> headers;  // added to the response head
  bool retry_line = true;                                    // the body starts with `retry:`
};

// The stream of run `run_id` from the event after `after_id` to its done: a new run's,
// or (an Idempotency-Key retry) that run's events from its start, replayed if it ended.
awaitable<handler_result> stream_run(request_context& ctx, std::shared_ptr<core::session_channel> channel,
                                     const std::string& session_id, const std::string& run_id, std::int64_t after_id,
                                     stream_wire wire = {});

// The live run's stream from its first event (replayed, then live) to its done; 204 No
// Content when no run is live (how the AI SDK's resume asks).
awaitable<handler_result> stream_live_run(request_context& ctx, std::shared_ptr<core::session_channel> channel, stream_wire wire);

// POST /messages with Last-Event-ID: replay after N, then the live run to its done (or end).
awaitable<handler_result> resume_run_stream(request_context& ctx);

// GET /sessions/{id}/events as text/event-stream.
awaitable<handler_result> follow_session_stream(request_context& ctx);

}  // namespace agw::gateway::api
