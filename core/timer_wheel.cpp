#include "core/timer_wheel.hpp"

#include <bit>

namespace agw::core {

timer_wheel::timer_wheel(std::size_t slots)
    : slot_count_(std::bit_ceil(slots < 2 ? std::size_t{2} : slots)),
      mask_(slot_count_ - 1),
      heads_(std::make_unique<hook[]>(slot_count_)) {
  for (std::size_t s = 0; s < slot_count_; ++s) heads_[s].prev_ = heads_[s].next_ = &heads_[s];
}

void timer_wheel::schedule(hook& h, std::uint64_t due) {
  if (h.scheduled()) unlink(h);
  h.due_ = due > now_ ? due : now_ + 1;
  // At the slot's tail: entries due at the same tick are taken in the order scheduled.
  hook& head = heads_[h.due_ & mask_];
  h.prev_ = head.prev_;
  h.next_ = &head;
  head.prev_->next_ = &h;
  head.prev_ = &h;
  ++size_;
}

void timer_wheel::cancel(hook& h) {
  if (h.scheduled()) unlink(h);
}

void timer_wheel::unlink(hook& h) {
  h.prev_->next_ = h.next_;
  h.next_->prev_ = h.prev_;
  h.prev_ = h.next_ = nullptr;
  --size_;
}

}  // namespace agw::core
