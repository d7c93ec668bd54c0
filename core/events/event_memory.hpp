#pragma once
// What a session channel holds in memory of its committed events: the ring
// EventBuffer (the newest frames, for resumes and followers) and the
// unsegmented tail (frames only the shared journal holds durably, kept until
// they reach a segment). Both are suffixes of the committed sequence ending at
// the last committed id, so whatever memory holds, it holds without holes.
//
// Not thread-safe: owned by the channel, used on its strand only.
#include <cstdint>
#include <vector>

#include "core/events/event_buffer.hpp"
#include "core/events/event_frame.hpp"

namespace agw::core {

class event_memory {
 public:
  explicit event_memory(std::size_t ring_size) : ring_(ring_size) {}

  // A batch just committed, in id order; `journal_only`: it reached the journal, not a segment.
  void add_committed(const std::vector<frame_ptr>& frames, bool journal_only);
  // Every journaled frame is in a segment now.
  void segment_written() { unsegmented_.clear(); }
  const std::vector<frame_ptr>& unsegmented() const { return unsegmented_; }

  std::int64_t oldest() const;  // the oldest id served from memory; 0 when none
  // Whether memory serves every committed event after `after_id` (`committed`: the last id).
  bool holds_all_after(std::int64_t after_id, std::int64_t committed) const;
  // The frames after `after_id` that memory serves, at most `limit`, in id order.
  std::vector<frame_ptr> after(std::int64_t after_id, std::size_t limit = SIZE_MAX) const;

  // An idle session lets its ring go (a later resume reads the log); the tail stays.
  void release_ring() { ring_.clear(); }
  void clear() {
    ring_.clear();
    unsegmented_.clear();
  }

 private:
  event_buffer ring_;
  std::vector<frame_ptr> unsegmented_;  // committed to the journal only, consecutive ids
};

}  // namespace agw::core
