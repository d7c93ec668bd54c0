#pragma once
// An agent produces one run's events through its run_context. It runs on the
// session's strand: it may await (timers, tools, upstream I/O) but never block.
#include <boost/asio/awaitable.hpp>
#include <memory>

namespace agw::core {

class run_context;

class agent {
 public:
  virtual ~agent() = default;
  // Returns when the run's content is complete, the run was aborted
  // (ctx.aborted()), or after ctx.fail(). Exceptions count as failures.
  virtual boost::asio::awaitable<void> run(run_context& ctx) = 0;
};

}  // namespace agw::core
