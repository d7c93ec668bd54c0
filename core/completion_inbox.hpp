#pragma once
// Completions that another thread hands to an io_context: each hand-over's items wait
// here until a posted handler runs them, on the context's thread, each on its own
// strand (in place when the strand is free). Hand-overs that come before that handler
// ran join it: a thread that settles many sessions at once (the store's writer after a
// group commit, the event journal's for batches appended outside the io threads)
// queues one handler per io thread, not one per session.
//
// A handler runs items for at most `slice` (at least one item), then posts itself
// again for the rest: a commit that completes hundreds of requests at once (a burst of
// new runs, each of which starts in its completion) is run in slices, between which
// the thread's other handlers (token timers, journal flushes, writes to streams) get
// their turn, instead of waiting behind the whole burst (docs/streaming.md, "A burst
// of new runs and the streams already running").
//
// Also what names an io thread's lane of journal batches (persistence's
// sqlite_event_writer): of_local() finds the inbox of the context the calling thread
// runs.
//
// One per io_context (an asio service: `of(context)`), for a context run by one
// thread (io_pool's are). Outcomes still waiting when the context shuts down are
// destroyed there, as posted handlers are, and later hand-overs are dropped.
//
// Thread-safety: hand_over() from any thread, while the context exists (the event
// writer and the store executor are stopped before the io contexts go).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "core/io_executor.hpp"

namespace agw::core {

class completion_inbox final : public boost::asio::io_context::service {
 public:
  // A completion and the strand (on this context) it runs on.
  using item = std::pair<io_strand, std::function<void()>>;

  static boost::asio::io_context::id id;
  // How long one handler runs items before it gives the thread's other handlers a turn.
  static constexpr std::chrono::microseconds slice{500};
  explicit completion_inbox(boost::asio::io_context& context);

  static completion_inbox& of(boost::asio::io_context& context);
  // The inbox of the context behind `executor` when it is an io_strand of the calling
  // thread's context; otherwise null. (use_service takes the context's registry lock:
  // callers keep the pointer, as a channel's context never changes.)
  static completion_inbox* of_local(const boost::asio::any_io_executor& executor);

  // Any thread: runs each item on its strand, in order, in the context's next handlers
  // for them.
  void hand_over(std::vector<item> items);

 private:
  void shutdown() override;
  void take();  // the context's thread

  boost::asio::io_context& context_;
  std::mutex mutex_;
  std::vector<item> waiting_;  // under mutex_
  bool posted_ = false;        // under mutex_: a take() is queued or running (it sees waiting_)
  bool shut_ = false;          // under mutex_: the context shut down
};

}  // namespace agw::core
