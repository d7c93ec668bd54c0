#pragma once
// The ring EventBuffer: the newest `capacity` committed frames of one session,
// already serialized, so a resume inside the ring costs no storage read and no
// re-serialization. Not thread-safe: owned by the session's strand.
#include <cstdint>
#include <vector>

#include "core/events/event_frame.hpp"

namespace agw::core {

class event_buffer {
 public:
  explicit event_buffer(std::size_t capacity);

  void push(frame_ptr frame);  // ids must arrive in increasing order
  // The held frames with id > after_id, in order.
  std::vector<frame_ptr> after(std::int64_t after_id) const;

  void clear();                    // also frees the slots: an idle session's ring costs nothing
  std::int64_t oldest_id() const;  // 0 when empty
  std::int64_t newest_id() const;  // 0 when empty
  std::size_t size() const { return size_; }

  // The ring of a session whose last committed id is `committed` (it always ends there):
  // does it hold every committed event after `after_id`?
  bool holds_all_after(std::int64_t after_id, std::int64_t committed) const {
    return after_id >= committed || (size_ && oldest_id() <= after_id + 1);
  }
  // The newest id a reader must take from the log rather than the ring.
  std::int64_t log_upto(std::int64_t committed) const { return size_ ? oldest_id() - 1 : committed; }

 private:
  std::size_t capacity_;
  std::vector<frame_ptr> slots_;  // allocated on first push, released by clear()
  std::size_t head_ = 0;          // index of the oldest frame
  std::size_t size_ = 0;
};

}  // namespace agw::core
