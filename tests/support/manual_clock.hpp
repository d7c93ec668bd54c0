#pragma once
// A core::clock whose time moves only when the test says so: advance() moves
// the wall and the steady time together and completes every wait that is then
// due, earliest deadline first, by posting its completion to its executor (as
// a real timer would; nothing runs inside advance()). Tests of retries, TTLs
// and pacing then run at full speed: drive the io_context until the code under
// test is parked on the clock (pending_waits()), advance, drive again. A parked
// coroutine still holds its co_spawn's work, so drive with poll() or run_one()
// until a condition holds, not with run().
//
// Thread-safety: every method may be called from any thread (one mutex; no
// completion is posted under it). A timer is used on its executor, like a real
// one. Waits still pending when the clock goes are dropped (their coroutines
// destroyed): let them finish, or destroy the clock before the io_context.
#include <algorithm>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/clock.hpp"

namespace agw::test {

class manual_clock final : public core::clock {
 public:
  // 2026-01-01T00:00:00Z: a fixed, readable start, so expected timestamps are plain numbers.
  static constexpr std::int64_t default_start_ms = 1'767'225'600'000;

  explicit manual_clock(std::int64_t wall_start_ms = default_start_ms) : state_(std::make_shared<state>()) {
    state_->wall = core::wall_time(std::chrono::milliseconds(wall_start_ms));
    // Far from the epoch, so `now - delay` never goes below zero.
    state_->steady = core::steady_time(std::chrono::hours(24 * 365));
  }
  ~manual_clock() override {
    std::vector<waiter> dropped;
    {
      std::lock_guard lock(state_->mutex);
      dropped.swap(state_->waiters);
    }
  }

  core::wall_time wall_now() const override {
    std::lock_guard lock(state_->mutex);
    return state_->wall;
  }
  core::steady_time steady_now() const override {
    std::lock_guard lock(state_->mutex);
    return state_->steady;
  }
  std::unique_ptr<core::wait_timer> make_timer(boost::asio::any_io_executor executor) const override {
    return std::make_unique<timer>(state_, std::move(executor));
  }

  // Moves both clocks on by `d`, then posts the completions of the waits now due.
  void advance(std::chrono::steady_clock::duration d) {
    std::vector<waiter> due;
    {
      std::lock_guard lock(state_->mutex);
      state_->wall += std::chrono::duration_cast<core::wall_time::duration>(d);
      state_->steady += d;
      auto& all = state_->waiters;
      auto split = std::stable_partition(all.begin(), all.end(), [&](const waiter& w) { return w.deadline > state_->steady; });
      due.assign(std::make_move_iterator(split), std::make_move_iterator(all.end()));
      all.erase(split, all.end());
    }
    std::stable_sort(due.begin(), due.end(), [](const waiter& a, const waiter& b) { return a.deadline < b.deadline; });
    for (auto& w : due) w.complete(true);
  }
  // Advances to the earliest pending deadline (if it is ahead); false when nothing waits.
  bool advance_to_next() {
    auto next = next_deadline();
    if (!next) return false;
    advance(std::max(*next - steady_now(), std::chrono::steady_clock::duration::zero()));
    return true;
  }

  std::size_t pending_waits() const {
    std::lock_guard lock(state_->mutex);
    return state_->waiters.size();
  }
  std::optional<core::steady_time> next_deadline() const {
    std::lock_guard lock(state_->mutex);
    std::optional<core::steady_time> next;
    for (const auto& w : state_->waiters)
      if (!next || w.deadline < *next) next = w.deadline;
    return next;
  }

 private:
  struct waiter {
    std::uint64_t timer_id;
    core::steady_time deadline;
    std::function<void(bool)> complete;  // posts the wait's completion to its executor
  };
  // Shared with the timers, which may outlive the clock (a run kept by a frame).
  struct state {
    mutable std::mutex mutex;
    core::wall_time wall;
    core::steady_time steady;
    std::vector<waiter> waiters;
    std::uint64_t next_timer_id = 1;
  };

  class timer final : public core::wait_timer {
   public:
    timer(std::shared_ptr<state> s, boost::asio::any_io_executor executor)
        : state_(std::move(s)), executor_(std::move(executor)) {
      std::lock_guard lock(state_->mutex);
      id_ = state_->next_timer_id++;
    }
    // A real timer's destructor ends its pending wait as cancelled; so does this one.
    ~timer() override { cancel(); }

    boost::asio::awaitable<bool> wait_until(core::steady_time deadline) override {
      auto init = [this, deadline](auto handler) { enqueue(deadline, std::move(handler)); };
      return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(bool)>(std::move(init),
                                                                                            boost::asio::use_awaitable);
    }
    void cancel() override {
      std::vector<waiter> cancelled;
      {
        std::lock_guard lock(state_->mutex);
        auto& all = state_->waiters;
        auto split = std::stable_partition(all.begin(), all.end(), [&](const waiter& w) { return w.timer_id != id_; });
        cancelled.assign(std::make_move_iterator(split), std::make_move_iterator(all.end()));
        all.erase(split, all.end());
      }
      for (auto& w : cancelled) w.complete(false);
    }

   private:
    template <class Handler>
    void enqueue(core::steady_time deadline, Handler handler) {
      // std::function needs a copyable target: the (move-only) handler is shared.
      auto held = std::make_shared<Handler>(std::move(handler));
      auto target = boost::asio::get_associated_executor(*held, executor_);
      waiter w{id_, deadline,
               [held, target](bool fired) { boost::asio::post(target, [held, fired] { std::move (*held)(fired); }); }};
      bool due = false;
      {
        std::lock_guard lock(state_->mutex);
        due = deadline <= state_->steady;
        if (!due) state_->waiters.push_back(std::move(w));
      }
      // Already due: completes at once, but never inside the initiating call (as asio's timers).
      if (due) w.complete(true);
    }

    std::shared_ptr<state> state_;
    boost::asio::any_io_executor executor_;
    std::uint64_t id_ = 0;
  };

  std::shared_ptr<state> state_;
};

}  // namespace agw::test
