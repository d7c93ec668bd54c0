#pragma once
// The events that only the event journal holds durably, per session: kept in
// memory until the session writes them into a segment of its own, so reads
// (events_after, oldest_event_id) see them without reading the journal, and the
// journal records each session still needs (its claim: the seq of its oldest
// journal-only event), below which the journal's files may go.
//
// Ordering that makes the release safe: events are added with their record's seq
// by the thread that wrote the record, before it lets go of the writer's journal
// lock, and the files below oldest_claim() are taken under that lock; a segment that takes over a prefix of the
// tail has committed before segmented() drops that prefix. Events are added to a tail
// only once durable, so a reader never sees an event a crash could take back.
//
// A segment may be in flight while later events join the tail (a paced run's next
// tokens are journaled meanwhile): segmented() drops only what the segment holds.
//
// The writer reaches a session's entry through its slot (open() once per session),
// so the per-batch steps look nothing up by id. Readers look the session up by id.
// A slot outlives forget(): what the writer still adds to it is seen by nobody.
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
  // Events (consecutive ids, after the tail's last) now durable in journal record
  // `seq`; returns the tail's size before them.
  std::size_t add(slot& s, const std::vector<core::frame_ptr>& events, std::uint64_t seq);
  // A segment holding the tail's events up to `through_id` committed: they and their
  // claim go; returns the tail's size after.
  std::size_t segmented(slot& s, std::int64_t through_id);
  std::vector<core::frame_ptr> tail(const slot& s) const;
  // The session was deleted: its entry (and any slot of it) goes.
  void forget(std::string_view session_id);

  std::size_t size(std::string_view session_id) const;
  // The tail's events with id > after_id, at most `limit`.
  std::vector<core::frame_ptr> after(std::string_view session_id, std::int64_t after_id, std::size_t limit) const;
  std::int64_t oldest_id(std::string_view session_id) const;  // 0: no tail
  // The seq below which no session needs the journal; none: no tail holds an event.
  std::optional<std::uint64_t> oldest_claim() const;

 private:
  struct tail_state {
    std::vector<core::frame_ptr> events;  // consecutive ids, durable in the journal only
    std::vector<std::uint64_t> seqs;      // the journal record of each of `events`
    bool forgotten = false;               // its session was deleted: late additions are not kept
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
  // The slots holding events: oldest_claim() walks these, not every session opened
  // since start-up.
  std::unordered_set<const tail_state*> claimed_;
};

}  // namespace agw::persistence
