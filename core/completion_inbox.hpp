#pragma once
// Completions that another thread hands to an io_context, taken at a timer pass its
// thread makes anyway when it said one is coming, instead of waking it.
//
// At a paced load an io thread wakes about once a millisecond for its runs' token
// timers (all on the whole millisecond, core/clock). Each cycle of the event journal's
// thread then posted the cycle's commit outcomes, which woke the io thread a second
// time in most milliseconds (the post's epoll_ctl, which interrupts the reactor, is
// paid by the journal's thread, the wake-up and context switch by the io thread). Here
// the io thread that hands a batch to the journal calls expect(): when one of the
// thread's timers is due within pass_window (core/clock's timer_grains), that arms one
// timer on the same millisecond, which fires in the same reactor pass and needs no
// re-arm of the reactor's timerfd. Outcomes handed over while that pass is armed wait
// for it; outcomes handed over when no pass is armed (no timer of the thread due soon:
// a light load, an agent fed by its upstream's socket) are posted at once, as before,
// so nothing waits for a pass that nobody armed. An outcome that expect() announced
// after the pass was armed keeps the flag up through the thread's next pass when one
// is due within pass_window (again_), so a journal cycle that ends just after a pass
// still finds one armed.
//
// What it costs: up to pass_window more from commit to release while passes are armed
// (the release then comes with the thread's next timers). Measured in
// docs/streaming.md, "Commit outcomes at the io thread's next timer pass (2026-11-29)".
//
// One per io_context (an asio service: `of(context)`), for a context run by one
// thread (io_pool's are): expect() takes "running in this thread" as "the thread".
// Outcomes still waiting when the context shuts down are destroyed there, as posted
// handlers are, and later hand-overs are dropped.
//
// Thread-safety: hand_over() from any thread, while the context exists (the event
// writer is stopped before the io contexts go). expect() only on the context's own
// thread; from any other thread it does nothing (outcomes are then posted).
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "core/clock.hpp"
#include "core/io_executor.hpp"

namespace agw::core {

class completion_inbox final : public boost::asio::io_context::service {
 public:
  // A completion and the strand (on this context) it runs on.
  using item = std::pair<io_strand, std::function<void()>>;

  static boost::asio::io_context::id id;
  // How far ahead a pass may be armed: the longest an outcome waits for one.
  static constexpr std::chrono::milliseconds pass_window{1};
  explicit completion_inbox(boost::asio::io_context& context);

  static completion_inbox& of(boost::asio::io_context& context);
  // The inbox of the context behind `executor` when it is an io_strand of the calling
  // thread's context; otherwise null. (use_service takes the context's registry lock:
  // callers keep the pointer, as a channel's context never changes.)
  static completion_inbox* of_local(const boost::asio::any_io_executor& executor);

  // On the context's thread: an outcome for this context is on its way from another thread.
  void expect();
  // Any thread: runs each item on its strand, in order, at the armed pass or at once.
  void hand_over(std::vector<item> items);

 private:
  void shutdown() override;
  void arm(steady_time at);  // the context's thread
  void on_pass();            // the context's thread
  void take();               // the context's thread

  boost::asio::io_context& context_;
  boost::asio::steady_timer pass_;  // the context's thread alone
  bool again_ = false;              // the context's thread alone
  std::atomic<bool> armed_{false};  // written by the context's thread, read by hand_over()
  std::mutex mutex_;
  std::vector<item> waiting_;  // under mutex_
  bool shut_ = false;          // under mutex_: the context shut down
};

}  // namespace agw::core
