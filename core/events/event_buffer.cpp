#include "core/events/event_buffer.hpp"

namespace agw::core {

event_buffer::event_buffer(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

void event_buffer::push(frame_ptr frame) {
  if (slots_.empty()) slots_.resize(capacity_);
  if (size_ < slots_.size()) {
    slots_[(head_ + size_) % slots_.size()] = std::move(frame);
    ++size_;
  } else {
    slots_[head_] = std::move(frame);
    head_ = (head_ + 1) % slots_.size();
  }
}

void event_buffer::clear() {
  std::vector<frame_ptr>().swap(slots_);
  head_ = 0;
  size_ = 0;
}

std::int64_t event_buffer::oldest_id() const { return size_ ? slots_[head_]->id : 0; }

std::int64_t event_buffer::newest_id() const { return size_ ? slots_[(head_ + size_ - 1) % slots_.size()]->id : 0; }

std::vector<frame_ptr> event_buffer::after(std::int64_t after_id) const {
  std::vector<frame_ptr> out;
  if (!size_ || after_id >= newest_id()) return out;
  // Ids are consecutive inside the ring, so the start is computed, not searched.
  std::int64_t skip = after_id + 1 - oldest_id();
  std::size_t start = skip > 0 ? static_cast<std::size_t>(skip) : 0;
  out.reserve(size_ - start);
  for (std::size_t i = start; i < size_; ++i) out.push_back(slots_[(head_ + i) % slots_.size()]);
  return out;
}

}  // namespace agw::core
