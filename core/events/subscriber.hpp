#pragma once
// Something that receives a session's committed frames: an SSE stream, a long poll.
// The session strand calls these; implementations must return at once (post to
// their own executor, never block or write here) so one slow client never slows
// the run or the other subscribers, and must not call back into the channel
// (it walks its subscriber list while delivering).
#include <cstddef>
#include <memory>

#include "core/events/event_frame.hpp"

namespace agw::core {

class subscriber {
 public:
  virtual ~subscriber() = default;
  // Frames in id order; a subscriber may see ids it already has (it skips them).
  virtual void deliver(const frame_batch& frames) = 0;
  // Frames delivered that the subscriber has not taken yet (any thread; may be stale).
  // A replay hands its ring tail over only when this is 0, so the tail never counts as
  // a backlog on top of the page before it.
  virtual std::size_t backlog() const { return 0; }
  enum class close_reason { session_deleted, draining };
  // End the stream: always when the session is gone; when draining, streams that
  // end with their run may finish it first.
  virtual void close(close_reason why) = 0;
};

}  // namespace agw::core
