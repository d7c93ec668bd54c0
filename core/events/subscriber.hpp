#pragma once
// Something that receives a session's committed frames: an SSE stream, a long poll.
// The session strand calls these; implementations must return at once (post to
// their own executor, never block or write here) so one slow client never slows
// the run or the other subscribers, and must not call back into the channel
// (it walks its subscriber list while delivering).
//
// A subscriber is a cursor (docs/architecture.md, "Subscribers are cursors"): the
// channel hands it live batches while its backlog stays under the channel's bound;
// past that the channel stops, asks to be told when the backlog has drained, and
// then feeds it from memory or the durable log one page at a time until it has
// caught up. A slow reader is never cut for being slow.
#include <cstddef>
#include <functional>
#include <memory>

#include "core/events/event_frame.hpp"

namespace agw::core {

class subscriber {
 public:
  virtual ~subscriber() = default;
  // Frames in id order; a subscriber may see ids it already has (it skips them).
  virtual void deliver(const frame_batch& frames) = 0;
  // Frames delivered that the subscriber has not taken yet (any thread; may be stale).
  virtual std::size_t backlog() const { return 0; }
  // Calls `drained` once (from any thread, possibly before returning) when every frame
  // delivered so far has been taken (written out). Never called once the subscriber ended.
  virtual void when_drained(std::function<void()> drained) { drained(); }
  // session_deleted: the session is gone. draining: the server stops; streams that end
  // with their run may finish it first. broken: the sequence cannot go on for this
  // subscriber (the log could not be read, or retention removed events it had not
  // been sent yet): every stream ends, and the client's resume tells it what it missed.
  enum class close_reason { session_deleted, draining, broken };
  // End the stream (after what it was handed, with a clean end of the response).
  virtual void close(close_reason why) = 0;
};

}  // namespace agw::core
