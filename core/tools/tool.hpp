#pragma once

#include <string>
#include <string_view>

#include <boost/json/object.hpp>

namespace agw::core {

// Outcome of one tool invocation. Failures (bad arguments, math errors, ...)
// are reported here with a non-zero exit_code instead of being thrown, so a
// misbehaving model can never take down the run that called the tool.
struct tool_result {
  std::string output;
  int exit_code = 0;
};

// A built-in tool.
// Thread-safety: implementations must be safe to use concurrently from many
// threads through a const reference; invoke() is blocking and runs on a worker
// thread, never an io thread.
class tool {
 public:
  virtual ~tool() = default;

  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  // JSON Schema of the arguments object (for OpenAI-compatible `tools` declarations).
  virtual boost::json::object parameters_schema() const = 0;
  virtual tool_result invoke(const boost::json::object& args) const = 0;
};

}  // namespace agw::core
