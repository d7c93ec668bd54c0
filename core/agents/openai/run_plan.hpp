#pragma once
// Everything one openai run needs to know before it calls the upstream, worked
// out once from the process defaults, the session's profile and its config:
// the request settings, the URL and key, the tools it may declare, the price,
// the limits. Pure; thread-safe.
#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/agents/agent_environment.hpp"
#include "core/agents/openai/chat_request.hpp"
#include "core/context_window.hpp"
#include "core/tools/client_tool.hpp"
#include "core/tools/tool_registry.hpp"

namespace agw::core::openai {

struct run_plan {
  chat_settings chat;
  std::string url;                        // {base_url}/chat/completions
  std::string api_key;                    // "" = no Authorization header (a local server)
  std::vector<const tool*> tools;         // built-in, minus those a client tool of the same name shadows
  std::vector<client_tool> client_tools;  // the run's client's (AG-UI): handed back to it when called
  std::optional<model_price> price;
  openai_defaults limits;  // timeouts, steps, retries
  context_window context;  // config.context: what of the conversation each request carries
};

// `config` is the effective config (the profile's, overridden by the session's).
run_plan make_run_plan(const agent_environment& env, const agent_profile* profile, const boost::json::object& config,
                       const tool_registry& tools, const std::vector<client_tool>& client_tools = {});

// What `usage` costs at `price` (input and output per million tokens).
double estimated_cost(const model_price& price, std::int64_t input_tokens, std::int64_t output_tokens);

}  // namespace agw::core::openai
