#pragma once
// Many completions, each for its session's strand, handed to their io_contexts with one
// hand-over per context instead of one post per completion. A thread outside the io
// threads that finishes work for many sessions at once (the store's writer after a
// group commit; the event journal's, for batches appended outside the io threads)
// would otherwise queue a handler, and often wake a thread, per session; here each
// context's completions go to its completion_inbox, which runs them in place on the
// context's thread (their implicit strand, core/io_executor.hpp) in posted handlers, a
// slice at a time. Completions for any other kind of executor are posted to it one by one.
//
// Thread-safety: none; one thread fills it and calls hand_over_all().
#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <utility>
#include <vector>

#include "core/io_executor.hpp"

namespace agw::core {

class completion_fanout {
 public:
  void add(const boost::asio::any_io_executor& executor, std::function<void()> fn);
  // Hands everything added to its context's inbox (other executors: a post each), then
  // holds nothing.
  void hand_over_all();

 private:
  struct context_group {
    io_executor context;
    std::vector<std::pair<io_strand, std::function<void()>>> items;
  };
  std::vector<context_group> groups_;  // few: one per io thread
  std::vector<std::pair<boost::asio::any_io_executor, std::function<void()>>> others_;
};

}  // namespace agw::core
