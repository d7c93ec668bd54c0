#pragma once
// config.mock of a session: what the deterministic mock agent does.
#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace agw::core {

struct mock_tool_call {
  std::string name;
  boost::json::object args;
};

struct mock_options {
  std::optional<std::int64_t> tokens;       // emit this many tokens; default echoes the input word by word
  std::optional<double> tokens_per_second;  // default: as fast as possible
  // Called, for real, before the first token. A call of a tool the run's client declared
  // (AG-UI tools) is handed to the client and ends the run; a run that starts from the
  // client's tool results calls none (it answers them).
  std::vector<mock_tool_call> tool_calls;
  std::optional<std::int64_t> fail_after;  // emit an error after this many tokens
  std::int64_t think_ms = 0;               // silence before the first token
  std::vector<std::string> plan;           // planning event + one step_complete per step
  bool echo_variables = false;             // echo the session's variables (as the openai prompt has them), not the input
};

// Throws api_error(bad_request) naming the offending field.
mock_options parse_mock_options(const boost::json::value* mock);

}  // namespace agw::core
