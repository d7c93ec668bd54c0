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
// The writer reaches a session's entry through its slot (open() once per session),
// so the per-batch steps look nothing up by id. Readers (events_after,
// oldest_event_id) look the session up by id. A slot outlives forget(): the
// writer's job in flight may still claim into it, and nobody sees that claim.
//
// Thread-safety: every method may be called from any thread (one mutex; nothing
// is called out while it is held). A slot is only ever passed back to this object.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/events/event_frame.hpp"

namespace agw::persistence {

class journal_tails {
  struct tail_state;

 public:
  // One session's entry; opaque outside this class.
  using slot = tail_state;
  // The session's entry, made empty when it has none.
  std::shared_ptr<slot> open(const std::string& session_id);
  // Writer thread, in the append job: `seq` is a row the session's tail needs from now on.
  void claim(slot& s, std::int64_t seq);
  // After the journal row holding them committed; returns the tail's size before them.
  std::size_t add(slot& s, const std::vector<core::frame_ptr>& events);
  // After a segment holding the whole tail committed: the tail and its claim go.
  void segmented(slot& s);
  std::vector<core::frame_ptr> tail(const slot& s) const;
  std::size_t size(const slot& s) const;
  // The session was deleted: its entry (and any slot of it) goes.
  void forget(std::string_view session_id);

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
    bool forgotten = false;               // its session was deleted: a late claim is not kept
  };
  const tail_state* find(std::string_view session_id) const;

  // Looked up by string_view without building a string.
  struct id_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view id) const noexcept { return std::hash<std::string_view>{}(id); }
  };

  mutable std::mutex mutex_;
  // Every opened session until it is forgotten.
  std::unordered_map<std::string, std::shared_ptr<tail_state>, id_hash, std::equal_to<>> tails_;
  // The slots holding a claim: the cut's oldest_claim() walks these, not every session
  // opened since start-up.
  std::unordered_set<const tail_state*> claimed_;
};

}  // namespace agw::persistence
