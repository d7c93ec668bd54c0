#pragma once
// A wire encoding of a session's events other than the contract's SSE: what an
// sse_stream writes instead of each frame's own `sse` text. The contract's encoding
// needs none of this (it is made once per event, when the event is built); an
// encoder is for protocols whose bytes depend on what came before in the run
// (which part is open), so it holds that state, one encoder per stream.
//
// Thread: used only on its stream's executor, one frame at a time, in id order.
#include <string>
#include <string_view>

#include "core/events/event_frame.hpp"

namespace agw::gateway {

class stream_encoder {
 public:
  virtual ~stream_encoder() = default;
  // Appends the bytes for `frame` (which the stream sends next) to `out`; may append nothing.
  virtual void encode(const core::event_frame& frame, std::string& out) = 0;
};

}  // namespace agw::gateway
