#pragma once
// Tools a front end declares for one run (AG-UI's RunAgentInput.tools): offered to
// the model beside the built-in ones, but run by the client. When the model calls
// one, the run ends after the call (nothing runs it here); the client's next input
// carries the result as a `tool` message, which starts the run that continues the
// conversation (docs/frontends.md, "Front-end tools"). Plain data: copied into
// the run that offers them, which owns its copy.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/checkpoint.hpp"

namespace agw::core {

struct client_tool {
  std::string name;
  std::string description;
  boost::json::object parameters;  // JSON Schema of the arguments
};

// A client's answer to one of its tool calls.
struct client_tool_result {
  std::string tool_call_id;
  std::string content;
};

// The named client tool, or nullptr.
const client_tool* find_client_tool(const std::vector<client_tool>& tools, std::string_view name);

// The calls of the conversation's newest assistant turn that have no tool message
// yet, when nothing but tool messages came after that turn: the calls a client may
// still answer. Empty when a user message (or nothing) follows.
boost::json::array pending_tool_calls(const conversation_state& conversation);

}  // namespace agw::core
