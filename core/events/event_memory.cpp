#include "core/events/event_memory.hpp"

#include <algorithm>

namespace agw::core {

void event_memory::add_committed(const std::vector<frame_ptr>& frames, bool journal_only) {
  for (const auto& f : frames) ring_.push(f);
  if (journal_only) unsegmented_.insert(unsegmented_.end(), frames.begin(), frames.end());
}

std::int64_t event_memory::oldest() const {
  const std::int64_t ring = ring_.size() ? ring_.oldest_id() : 0;
  const std::int64_t tail = unsegmented_.empty() ? 0 : unsegmented_.front()->id;
  if (!ring || !tail) return ring ? ring : tail;
  return std::min(ring, tail);
}

bool event_memory::holds_all_after(std::int64_t after_id, std::int64_t committed) const {
  const std::int64_t from = oldest();
  return after_id >= committed || (from && from <= after_id + 1);
}

std::vector<frame_ptr> event_memory::after(std::int64_t after_id, std::size_t limit) const {
  std::vector<frame_ptr> out;
  // The tail reaches further back than the ring only while the ring is released or small.
  if (unsegmented_.empty() || (ring_.size() && ring_.oldest_id() <= unsegmented_.front()->id)) {
    out = ring_.after(after_id);
  } else {
    // Ids are consecutive in the tail, so the start is computed, not searched.
    const std::int64_t skip = after_id + 1 - unsegmented_.front()->id;
    const std::size_t start = skip > 0 ? static_cast<std::size_t>(skip) : 0;
    if (start < unsegmented_.size()) out.assign(unsegmented_.begin() + static_cast<std::ptrdiff_t>(start), unsegmented_.end());
  }
  if (out.size() > limit) out.resize(limit);
  return out;
}

}  // namespace agw::core
