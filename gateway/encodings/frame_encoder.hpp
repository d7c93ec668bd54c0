#pragma once
// A wire encoding of a session's frames other than the contract's SSE text (AG-UI,
// ...): what an sse_stream writes for each frame when its options name one. An
// encoder may keep per-stream state (which message is open), so each stream owns
// its own; the stream calls it on its executor, in id order, once per frame it sends.
// The handlers give streams a shared_frame_encoder (shared_encoding.hpp), so the
// frames of a run are encoded once per encoding whatever the number of streams.
#include <string>

#include "core/events/event_frame.hpp"

namespace agw::gateway {

class frame_encoder {
 public:
  virtual ~frame_encoder() = default;
  // Appends the bytes that stand for `frame` to `out` (possibly none).
  virtual void encode(const core::event_frame& frame, std::string& out) = 0;
  // True once the encoder can make nothing more for its stream (a shared encoding the
  // stream fell too far behind, gateway/encodings/shared_encoding.hpp): the stream ends
  // at once, cut, and its client resumes as its protocol does.
  virtual bool lost() const { return false; }
};

}  // namespace agw::gateway
