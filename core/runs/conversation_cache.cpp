#include "core/runs/conversation_cache.hpp"

#include <vector>

namespace agw::core {

std::optional<conversation_cache::entry> conversation_cache::take(const std::string& session_id) {
  std::lock_guard lock(mutex_);
  auto it = slots_.find(session_id);
  if (it == slots_.end()) return std::nullopt;
  auto out = std::move(it->second.value);
  erase(it);
  return out;
}

void conversation_cache::give_back(const std::string& session_id, entry e) {
  const auto bytes = estimate_bytes(e.state);
  // What is dropped is freed after the lock is let go (a long conversation is many frees).
  std::vector<entry> dropped;
  std::lock_guard lock(mutex_);
  auto drop = [&](std::unordered_map<std::string, slot>::iterator it) {
    dropped.push_back(std::move(it->second.value));
    erase(it);
  };
  if (auto it = slots_.find(session_id); it != slots_.end()) drop(it);
  if (bytes > budget_) return;
  while (bytes_ + bytes > budget_ && !ages_.empty()) drop(slots_.find(ages_.back()));
  ages_.push_front(session_id);
  slots_.emplace(session_id, slot{std::move(e), bytes, ages_.begin()});
  bytes_ += bytes;
}

std::size_t conversation_cache::size() const {
  std::lock_guard lock(mutex_);
  return slots_.size();
}

std::size_t conversation_cache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

std::size_t conversation_cache::estimate_bytes(const conversation_state& state) {
  // The fixed part covers the record, its ids and a few tool calls; exact sizes do not matter.
  // Messages already sized at an earlier give-back are not read again (the tally): a long
  // conversation costs what its last run added.
  constexpr std::size_t per_message = 512;
  auto& tally = state.tally;
  if (tally.sized > state.messages.size()) tally.sized = tally.bytes = 0;
  for (; tally.sized < state.messages.size(); ++tally.sized)
    tally.bytes += per_message + state.messages[tally.sized].content.size();
  return sizeof(conversation_state) + tally.bytes;
}

void conversation_cache::erase(std::unordered_map<std::string, slot>::iterator it) {
  bytes_ -= it->second.bytes;
  ages_.erase(it->second.age);
  slots_.erase(it);
}

stored_conversation newest_conversation(conversation_store& c, const session_record& session, conversation_cache::entry* cached) {
  if (cached && c.latest_checkpoint_version(session.thread_id) == cached->version)
    return {cached->version, 0, std::move(cached->state)};
  auto cp = c.latest_conversation(session.thread_id);
  return cp ? std::move(*cp) : stored_conversation{};
}

}  // namespace agw::core
