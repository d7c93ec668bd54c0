#pragma once
// Runs tools on a small worker pool, never on an io thread, with a time limit.
// Thread-safe. A tool that overruns is abandoned (its result is dropped when it
// finishes); built-in tools are CPU-bounded, so the worker is not lost for long.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/json/object.hpp>
#include <chrono>

#include "core/tools/tool_registry.hpp"

namespace agw::core {

struct tool_outcome {
  tool_result result;
  enum class kind { ok, failed, unknown_tool, timed_out } status = kind::ok;
};

class tool_runner {
 public:
  tool_runner(const tool_registry& tools, std::size_t threads, std::chrono::duration<double> timeout);
  ~tool_runner();

  // Completes on the calling coroutine's executor.
  boost::asio::awaitable<tool_outcome> run(std::string name, boost::json::object args);
  const tool_registry& tools() const { return tools_; }

 private:
  const tool_registry& tools_;
  boost::asio::thread_pool pool_;
  std::chrono::duration<double> timeout_;
};

}  // namespace agw::core
