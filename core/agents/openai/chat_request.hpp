#pragma once
// The JSON body of one chat-completions request: the model settings, the
// system prompt, the session's conversation as the API expects it (assistant
// tool calls with their arguments as JSON text, one "tool" message per
// result; a call a client never answered gets a placeholder result), the tools the
// model may call (built-in, then the run's client tools), stream + include_usage.
// Pure; thread-safe.
#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/checkpoint.hpp"
#include "core/tools/client_tool.hpp"
#include "core/tools/tool.hpp"

namespace agw::core::openai {

struct chat_settings {
  std::string model;
  std::optional<double> temperature;
  std::optional<std::int64_t> max_tokens;
  std::string system_prompt;  // "" = none
};

boost::json::array conversation_messages(const conversation_state& conversation, const std::string& system_prompt);
std::string chat_request_body(const chat_settings& settings, const conversation_state& conversation,
                              const std::vector<const tool*>& tools, const std::vector<client_tool>& client_tools = {});

}  // namespace agw::core::openai
