#pragma once
// A hashed timing wheel (Varghese & Lauck): entries due at a tick number, each in
// the slot `due % slots`, an intrusive doubly-linked list. Advancing from tick A to
// tick B visits only the slots A+1..B (at most one revolution) and takes the
// entries due by B; an entry more than a revolution ahead stays in its slot and is
// passed over until its round comes. Scheduling, moving and cancelling are O(1)
// pointer swaps; nothing allocates after construction (the hooks live in the
// objects scheduled).
//
// Ticks are plain numbers: the owner maps time to ticks (gateway/heartbeat_wheel
// does, over core::clock), so this is tested without any clock.
//
// Thread-safety: none; the owner serialises every call (heartbeat_wheel holds its
// mutex around each). A hook must be cancelled (or taken) before it is destroyed.
#include <cstddef>
#include <cstdint>
#include <memory>

namespace agw::core {

class timer_wheel {
 public:
  // Embedded in what is scheduled. Not copyable: the wheel points at it.
  class hook {
   public:
    hook() = default;
    hook(const hook&) = delete;
    hook& operator=(const hook&) = delete;
    bool scheduled() const { return next_ != nullptr; }
    std::uint64_t due() const { return due_; }

   private:
    friend class timer_wheel;
    hook* prev_ = nullptr;
    hook* next_ = nullptr;
    std::uint64_t due_ = 0;
  };

  // `slots` is rounded up to a power of two (at least 2).
  explicit timer_wheel(std::size_t slots);
  timer_wheel(const timer_wheel&) = delete;
  timer_wheel& operator=(const timer_wheel&) = delete;

  // The tick last advanced to (0 at first).
  std::uint64_t now() const { return now_; }
  std::size_t size() const { return size_; }

  // Schedules `h` at tick `due` (moving it if it was scheduled). A tick not after
  // now() means the next one: what is due is taken by the next advance.
  void schedule(hook& h, std::uint64_t due);
  // Unschedules `h`; nothing when it is not scheduled.
  void cancel(hook& h);

  // Moves to `tick` (nothing when it is not ahead) and calls take(hook&) for every
  // entry due by then, each unscheduled before its call. `take` must not schedule or
  // cancel on this wheel (collect what was taken and act after).
  template <class Take>
  void advance(std::uint64_t tick, Take&& take) {
    if (tick <= now_) return;
    // Past one revolution, every slot has been visited once: enough to see everything.
    const std::uint64_t steps = tick - now_ < slot_count_ ? tick - now_ : slot_count_;
    for (std::uint64_t i = 1; i <= steps; ++i) {
      hook& head = heads_[(now_ + i) & mask_];
      for (hook* h = head.next_; h != &head;) {
        hook* next = h->next_;
        if (h->due_ <= tick) {
          unlink(*h);
          take(*h);
        }
        h = next;
      }
    }
    now_ = tick;
  }

  // Unschedules everything, calling take(hook&) for each (the owner's shutdown).
  template <class Take>
  void clear(Take&& take) {
    for (std::size_t s = 0; s < slot_count_; ++s) {
      hook& head = heads_[s];
      while (head.next_ != &head) {
        hook* h = head.next_;
        unlink(*h);
        take(*h);
      }
    }
  }

 private:
  void unlink(hook& h);

  std::size_t slot_count_;
  std::uint64_t mask_;
  std::unique_ptr<hook[]> heads_;  // sentinels: an empty slot's head points at itself
  std::uint64_t now_ = 0;
  std::size_t size_ = 0;
};

}  // namespace agw::core
