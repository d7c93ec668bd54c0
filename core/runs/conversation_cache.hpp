#pragma once
// Sessions' conversations kept between their runs, so that starting a run need
// not read and parse the whole conversation from storage (what a turn costs then
// does not grow with the conversation). A run takes its session's entry when it
// starts and gives the conversation back once its final checkpoint committed;
// the start's write job uses an entry only while its version is still the
// store's newest (conversation_store::latest_checkpoint_version), and reads the
// store otherwise, so a stale entry costs a read, never a wrong conversation.
//
// Bounded: entries hold at most `budget_bytes` of conversation (estimated), the
// least recently given back dropped first; a conversation larger than the whole
// budget is not kept. Thread-safe: taken on a connection's strand, given back on
// a channel's; one mutex, held for map operations only.
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/checkpoint.hpp"
#include "core/session.hpp"
#include "core/storage/conversation_store.hpp"

namespace agw::core {

class conversation_cache {
 public:
  struct entry {
    std::int64_t version = 0;  // the checkpoint version `state` is
    conversation_state state;
  };
  static constexpr std::size_t default_budget_bytes = std::size_t{64} << 20;

  explicit conversation_cache(std::size_t budget_bytes = default_budget_bytes) : budget_(budget_bytes) {}

  // Removes and returns the session's entry, if any.
  std::optional<entry> take(const std::string& session_id);
  // Keeps (or replaces) the session's entry, dropping the oldest ones past the budget.
  void give_back(const std::string& session_id, entry e);

  std::size_t size() const;
  std::size_t bytes() const;

  // What an entry is counted as: its messages' text and a fixed overhead each.
  static std::size_t estimate_bytes(const conversation_state& state);

 private:
  struct slot {
    entry value;
    std::size_t bytes = 0;
    std::list<std::string>::iterator age;
  };
  void erase(std::unordered_map<std::string, slot>::iterator it);

  const std::size_t budget_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, slot> slots_;
  std::list<std::string> ages_;  // newest first
  std::size_t bytes_ = 0;
};

// The conversation at the store's newest checkpoint: the cached one while that is still
// its version (no read of the conversation), else the store's. On a store thread.
stored_conversation newest_conversation(conversation_store& c, const session_record& session, conversation_cache::entry* cached);

}  // namespace agw::core
