#pragma once
// A wire encoding of a session's frames other than the contract's SSE text (AG-UI,
// ...): what an sse_stream writes for each frame when its options name one. An
// encoder may keep per-stream state (which message is open), so each stream owns
// its own; the stream calls it on its executor, in id order, once per frame it sends.
#include <string>

#include "core/events/event_frame.hpp"

namespace agw::gateway {

class frame_encoder {
 public:
  virtual ~frame_encoder() = default;
  // Appends the bytes that stand for `frame` to `out` (possibly none).
  virtual void encode(const core::event_frame& frame, std::string& out) = 0;
};

}  // namespace agw::gateway
