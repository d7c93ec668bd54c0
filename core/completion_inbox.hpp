#pragma once
// Completions that another thread hands to an io_context: each hand-over's items wait
// here until a posted handler runs them in place, on the context's thread (the
// sessions' implicit strand, core/io_executor.hpp). Hand-overs that come while such a
// handler is queued or running join it: a thread that settles many sessions at once
// (the store's writer after a group commit, the event journal's for batches appended
// outside the io threads) queues one handler per io context, not one per session.
//
// A handler starts no item once it has run for `slice` (it runs at least one), and
// posts itself again for the rest: a commit that completes hundreds of requests at
// once (a burst of new runs, each of which starts in its completion) runs in slices.
// Between two slices run the handlers queued meanwhile (a journal flush or a stream's
// write that the slice's runs posted); timers and sockets that fall due are reached
// when the context next polls its reactor, at the latest after one more slice. Before,
// the streams already running waited behind the whole burst (docs/streaming.md, "A
// burst of new runs and the streams already running").
//
// Also what names an io thread's lane of journal batches (persistence's
// sqlite_event_writer): of_local() finds the inbox of the context the calling thread
// runs.
//
// One per io_context (an asio service: `of(context)`). Made for a context run by one
// thread (io_pool's are); on a context run by several, its items still run one at a
// time, in order. Outcomes still waiting when the context shuts down are destroyed
// there, as posted handlers are, and later hand-overs are dropped.
//
// Thread-safety: hand_over() and set_slice() from any thread, while the context exists
// (the event writer and the store executor are stopped before the io contexts go).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "core/io_executor.hpp"

namespace agw::core {

class completion_inbox final : public boost::asio::io_context::service {
 public:
  // A completion and the strand (this context's own executor) it runs on.
  using item = std::pair<io_strand, std::function<void()>>;

  static boost::asio::io_context::id id;
  // How long one handler runs items before it gives the thread's other handlers a turn.
  static constexpr std::chrono::microseconds default_slice{500};
  explicit completion_inbox(boost::asio::io_context& context);

  static completion_inbox& of(boost::asio::io_context& context);
  // The inbox of the context behind `executor` when it is an io_strand of the calling
  // thread's context; otherwise null. (use_service takes the context's registry lock:
  // callers keep the pointer, as a channel's context never changes.)
  static completion_inbox* of_local(const boost::asio::any_io_executor& executor);

  // Any thread: runs each item, in order, in the context's next handlers
  // for them.
  void hand_over(std::vector<item> items);
  // Tests that count handlers set a slice no preemption reaches.
  void set_slice(std::chrono::microseconds slice);

 private:
  void shutdown() override;
  void take();  // the context's thread

  boost::asio::io_context& context_;
  std::mutex mutex_;
  std::vector<item> waiting_;                        // under mutex_
  bool posted_ = false;                              // under mutex_: a take() is queued or running (it sees waiting_)
  bool shut_ = false;                                // under mutex_: the context shut down
  std::chrono::microseconds slice_ = default_slice;  // under mutex_
  // Taken from waiting_ and not run yet (the rest of a slice): only the one take() at a
  // time touches it, and shutdown() once no handler runs.
  std::deque<item> taken_;
};

}  // namespace agw::core
