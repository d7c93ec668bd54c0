#pragma once
// The events that only the shared event journal holds durably, per session:
// kept in memory until the session writes them into a segment of its own, so
// reads (events_after) see them without scanning the journal, and the journal
// rows each session still needs (its claim), below which the writer may cut.
//
// Ordering that makes the cut safe: a claim is taken by the journal append job
// itself, on the writer thread, before that job's commit; it is dropped only after
// the segment holding those events has committed; and the cut runs on the writer
// thread too. Events are added to a tail only after their commit, so a reader never
// sees an uncommitted event.
//
// Thread-safety: every method may be called from any thread (one mutex; nothing
// is called out while it is held).
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/events/event_frame.hpp"

namespace agw::persistence {

class journal_tails {
 public:
  // Writer thread, in the append job: `seq` is a row the session's tail needs from now on.
  void claim(const std::string& session_id, std::int64_t seq);
  // After the journal row holding them committed; returns the tail's size before them.
  std::size_t add(const std::string& session_id, const std::vector<core::frame_ptr>& events);
  // After a segment holding the whole tail committed: the tail and its claim go.
  void segmented(const std::string& session_id);
  void forget(std::string_view session_id);

  std::vector<core::frame_ptr> tail(std::string_view session_id) const;
  std::size_t size(std::string_view session_id) const;
  // The tail's events with id > after_id, at most `limit`.
  std::vector<core::frame_ptr> after(std::string_view session_id, std::int64_t after_id, std::size_t limit) const;
  std::int64_t oldest_id(std::string_view session_id) const;  // 0: no tail
  // The seq below which no session needs the journal; none: no claim holds any row.
  std::optional<std::int64_t> oldest_claim() const;

 private:
  struct tail_state {
    std::vector<core::frame_ptr> events;  // consecutive ids, committed to the journal only
    std::int64_t claim = 0;               // first journal row still needed; 0: none
  };
  const tail_state* find(std::string_view session_id) const;

  // Looked up by string_view without building a string (several lookups per event).
  struct id_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view id) const noexcept { return std::hash<std::string_view>{}(id); }
  };

  mutable std::mutex mutex_;
  std::unordered_map<std::string, tail_state, id_hash, std::equal_to<>> tails_;  // sessions with a tail or a claim only
};

}  // namespace agw::persistence
