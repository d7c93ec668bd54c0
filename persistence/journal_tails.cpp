#include "persistence/journal_tails.hpp"

#include <algorithm>

namespace agw::persistence {

std::shared_ptr<journal_tails::slot> journal_tails::open(const std::string& session_id) {
  std::lock_guard lock(mutex_);
  auto& t = tails_[session_id];
  if (!t) t = std::make_shared<tail_state>();
  return t;
}

std::size_t journal_tails::add(slot& s, const std::vector<core::frame_ptr>& events, std::uint64_t seq) {
  std::lock_guard lock(mutex_);
  const std::size_t before = s.events.size();
  if (s.forgotten) return before;
  s.events.insert(s.events.end(), events.begin(), events.end());
  s.seqs.insert(s.seqs.end(), events.size(), seq);
  if (!s.events.empty()) claimed_.insert(&s);
  return before;
}

std::size_t journal_tails::segmented(slot& s, std::int64_t through_id) {
  std::lock_guard lock(mutex_);
  if (s.events.empty()) return 0;
  // Ids are consecutive in a tail: the prefix's length is computed, not searched.
  const std::int64_t held = through_id + 1 - s.events.front()->id;
  const auto drop = static_cast<std::ptrdiff_t>(std::clamp<std::int64_t>(held, 0, static_cast<std::int64_t>(s.events.size())));
  s.events.erase(s.events.begin(), s.events.begin() + drop);
  s.seqs.erase(s.seqs.begin(), s.seqs.begin() + drop);
  if (s.events.empty()) {
    s.events.shrink_to_fit();  // an idle session holds nothing here
    s.seqs.shrink_to_fit();
    claimed_.erase(&s);
  }
  return s.events.size();
}

std::vector<core::frame_ptr> journal_tails::tail(const slot& s) const {
  std::lock_guard lock(mutex_);
  return s.events;
}

void journal_tails::forget(std::string_view session_id) {
  std::lock_guard lock(mutex_);
  if (auto it = tails_.find(session_id); it != tails_.end()) {
    it->second->forgotten = true;
    claimed_.erase(it->second.get());
    tails_.erase(it);
  }
}

const journal_tails::tail_state* journal_tails::find(std::string_view session_id) const {
  auto it = tails_.find(session_id);
  return it == tails_.end() ? nullptr : it->second.get();
}

std::size_t journal_tails::size(std::string_view session_id) const {
  std::lock_guard lock(mutex_);
  const auto* t = find(session_id);
  return t ? t->events.size() : 0;
}

std::vector<core::frame_ptr> journal_tails::after(std::string_view session_id, std::int64_t after_id, std::size_t limit) const {
  std::lock_guard lock(mutex_);
  const auto* t = find(session_id);
  std::vector<core::frame_ptr> out;
  if (!t || t->events.empty()) return out;
  // Ids are consecutive in a tail: the start is computed, not searched.
  const std::int64_t skip = after_id + 1 - t->events.front()->id;
  const std::size_t start = skip > 0 ? static_cast<std::size_t>(skip) : 0;
  for (std::size_t i = start; i < t->events.size() && out.size() < limit; ++i) out.push_back(t->events[i]);
  return out;
}

std::int64_t journal_tails::oldest_id(std::string_view session_id) const {
  std::lock_guard lock(mutex_);
  const auto* t = find(session_id);
  return t && !t->events.empty() ? t->events.front()->id : 0;
}

std::optional<std::uint64_t> journal_tails::oldest_claim() const {
  std::lock_guard lock(mutex_);
  std::optional<std::uint64_t> oldest;
  for (const auto* t : claimed_)
    if (!oldest || t->seqs.front() < *oldest) oldest = t->seqs.front();
  return oldest;
}

}  // namespace agw::persistence
