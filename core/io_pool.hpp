#pragma once
// The process's io threads: one io_context per thread, each run by that thread
// alone (concurrency hint 1). A handler posted to a thread's own context is queued
// without waking anybody, and no scheduler lock is contended. With one context
// shared by every thread, each handler taken while others were queued woke a
// second thread, and at a paced load those futex wake-ups and the context
// switches behind them were the largest single cost (docs/streaming.md, "Threads").
//
// Who runs where: an accepted connection stays on the context whose acceptor took
// it (gateway/listener has one per context; the kernel spreads connections over
// them); a session's channel goes to the context of the thread that first needs it
// (`local_or_next()`: the request's connection), so a run, its commits'
// completions and the stream of the client that started it usually share one
// thread. Process-wide services (signals, webhooks, sweeps) use `primary()`.
//
// Thread-safety: every method but run() may be called from any thread. run() is
// called once, by the thread that then serves the primary context.
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/io_executor.hpp"

namespace agw::core {

class io_pool {
 public:
  // `threads` contexts (at least one); `name` prefixes the extra threads' names.
  io_pool(unsigned threads, std::string name);
  ~io_pool();
  io_pool(const io_pool&) = delete;
  io_pool& operator=(const io_pool&) = delete;

  std::size_t size() const { return contexts_.size(); }
  boost::asio::io_context& primary() { return *contexts_.front(); }
  boost::asio::io_context& context(std::size_t i) { return *contexts_.at(i); }
  // Round robin over the contexts.
  boost::asio::io_context& next();
  // The context serving the calling thread; from any other thread, next().
  boost::asio::io_context& local_or_next();

  // Serves context 0 on the calling thread and every other on a thread of its own;
  // returns once stop() was called and every thread has returned.
  void run();
  // Stops every context (their queued handlers are not run).
  void stop();

 private:
  using work_guard = boost::asio::executor_work_guard<io_executor>;

  std::string name_;
  std::vector<std::unique_ptr<boost::asio::io_context>> contexts_;
  // A context with nothing to do must not return from run() before stop().
  std::vector<work_guard> keep_running_;
  std::atomic<std::size_t> turn_{0};
};

}  // namespace agw::core
