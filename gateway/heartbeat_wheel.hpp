#pragma once
// One timer for all the SSE streams of an io_context: a hashed timing wheel
// (core/timer_wheel) that a single timer advances every `tick`, taking only the
// streams whose time has come: a heartbeat after an interval of silence, or the
// deadline of a write in flight. A stream costs its hook (two pointers, a tick
// number, a reference to itself while scheduled): no asio timer, no pending wait,
// and no allocation per beat.
//
// Concurrency. The server runs one io_context per io thread, and a stream lives on
// its context's thread (its implicit strand, core/io_executor.hpp). The wheel itself
// is also safe for a context that several threads run (a test does; its members then
// need strands of their own, as dispatch runs them on the tick's thread):
// - schedule()/cancel() may be called from any thread; one mutex guards the wheel,
//   held only for a few pointer swaps and never while calling out. A stream calls
//   them about once per heartbeat interval (not per write: it keeps its own last
//   write time and, when woken early, moves itself), so the lock is cold.
// - The tick runs on the context. Under the lock it takes the streams due, each
//   kept alive by the reference the wheel held; outside the lock it hands each to
//   its stream, which dispatches onto its own executor. The tick runs on the
//   stream's io thread, so dispatch runs the stream there and then:
//   the heartbeat's write happens in the tick's call stack, with no handler queued
//   per stream and no thread woken.
// With one io_context per thread the mutex is never contended.
//
// Resolution: a stream scheduled at t is woken at the first tick at or after t,
// so at most one tick late and never early.
//
// Bounds: a member is in the wheel at most once (scheduling again moves it), so
// the wheel and one tick's batch hold at most as many entries as there are open
// streams, which the connections bound; nothing is queued per beat.
//
// Lifetime: a scheduled member is kept alive by the wheel (as a pending timer
// would keep its handler's owner), until it is taken, cancelled or the wheel goes.
// Destroy the wheel only while its io_context is not running (or before it runs);
// the members it releases must not call back into it from their destructors.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <memory>

#include "core/clock.hpp"
#include "core/timer_wheel.hpp"

namespace agw::gateway {

class heartbeat_wheel {
 public:
  using duration = std::chrono::steady_clock::duration;

  // What the wheel schedules (a stream). Its hook and self-reference are the wheel's,
  // guarded by the wheel's mutex.
  class member : private core::timer_wheel::hook {
   public:
    virtual ~member() = default;

   protected:
    member() = default;

   private:
    friend class heartbeat_wheel;
    // Called by the tick on the wheel's context, outside the wheel's lock, once the
    // member's time has come: `self` is this member, kept alive. Hop to the member's
    // own executor; the member decides there whether anything is due.
    virtual void on_due(std::shared_ptr<member> self) = 0;
    std::shared_ptr<member> hold_;  // set while scheduled
  };

  // Ticks on `io`, reading time from `clock` (which outlives the wheel).
  // `slots` bounds how far ahead one revolution reaches (slots x tick); later times
  // still work, passed over once per revolution.
  heartbeat_wheel(boost::asio::io_context& io, const core::clock& clock, duration tick, std::size_t slots = default_slots);
  ~heartbeat_wheel();
  heartbeat_wheel(const heartbeat_wheel&) = delete;
  heartbeat_wheel& operator=(const heartbeat_wheel&) = delete;

  // The wheel of the io_context `executor` runs on, made on first use with the real
  // clock and `tick` (an io_context service: it goes when the io_context does).
  // Every caller of one process passes the same tick (it follows the settings).
  static heartbeat_wheel& of(const boost::asio::any_io_executor& executor, duration tick);
  // The tick for these intervals: a twentieth of the shorter, within [10 ms, 250 ms],
  // so a heartbeat is at most 5 % late and an idle process ticks 4 times a second.
  static duration tick_for(duration heartbeat, duration write_timeout);

  // The time schedules are given in (the wheel's clock).
  core::steady_time now() const;
  duration tick() const;
  std::size_t size() const;

  // Wakes `m` (via on_due) at the first tick at or after `at`, moving it if it was
  // scheduled. Any thread. Ignored once the wheel is being destroyed.
  void schedule(std::shared_ptr<member> m, core::steady_time at);
  // Unschedules `m` and drops the wheel's reference to it. Any thread. A wake the
  // tick has already taken still comes: the member ignores it once it has ended.
  void cancel(member& m);

  static constexpr std::size_t default_slots = 1024;

 private:
  struct state;
  static boost::asio::awaitable<void> run(std::shared_ptr<state> s);

  std::shared_ptr<state> state_;  // shared with the tick loop's coroutine
};

}  // namespace agw::gateway
