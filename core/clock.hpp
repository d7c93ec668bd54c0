#pragma once
// Where the process reads time, so that tests of time run without sleeping:
// the wall clock (timestamps, TTLs, webhook due times: ms since the Unix
// epoch), the steady clock (deadlines), and timers that wait until a steady
// deadline and that a cancel cuts short (a run's abort ends its agent's sleep).
// One real_clock per process, made in main and passed down by reference;
// tests use tests/support/manual_clock.hpp, whose time moves only when the
// test advances it.
//
// Thread-safety: a clock's methods may be called from any thread (services on
// every strand, store jobs on the store threads read it). A wait_timer is used
// on the executor it was made for, like asio's steady_timer, and must outlive
// its pending wait (the coroutine frame that waits owns it, or its owner).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>

namespace agw::core {

using steady_time = std::chrono::steady_clock::time_point;
using wall_time = std::chrono::system_clock::time_point;

class wait_timer {
 public:
  virtual ~wait_timer() = default;
  // Completes on the timer's executor: true once `deadline` has passed, false when
  // cancel() came first. One wait at a time.
  virtual boost::asio::awaitable<bool> wait_until(steady_time deadline) = 0;
  // Ends the pending wait early (it returns false). With no wait pending it does
  // nothing, as steady_timer::cancel: callers keep their own flag (run::abort_).
  virtual void cancel() = 0;
};

class clock {
 public:
  virtual ~clock() = default;

  virtual wall_time wall_now() const = 0;
  virtual steady_time steady_now() const = 0;
  // A timer whose waits complete on `executor` (a strand, for state that lives on one).
  virtual std::unique_ptr<wait_timer> make_timer(boost::asio::any_io_executor executor) const = 0;

  // wall_now() in ms since the Unix epoch: what the store's *_at_ms columns hold.
  std::int64_t wall_ms() const;
  // A wait nothing cancels, on the awaiting coroutine's executor.
  boost::asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration d) const;
};

// The production clock: std::chrono::system_clock, steady_clock and asio's steady_timer.
// Stateless; thread-safe.
class real_clock final : public clock {
 public:
  wall_time wall_now() const override { return std::chrono::system_clock::now(); }
  steady_time steady_now() const override { return std::chrono::steady_clock::now(); }
  std::unique_ptr<wait_timer> make_timer(boost::asio::any_io_executor executor) const override;
};

// A wait_timer over asio's steady_timer (real_clock's). Executor: its own.
class steady_wait_timer final : public wait_timer {
 public:
  explicit steady_wait_timer(boost::asio::any_io_executor executor) : timer_(std::move(executor)) {}
  boost::asio::awaitable<bool> wait_until(steady_time deadline) override;
  void cancel() override { timer_.cancel(); }

 private:
  boost::asio::steady_timer timer_;
};

}  // namespace agw::core
