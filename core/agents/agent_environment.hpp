#pragma once
// What the agents of this process share beyond a session: the upstream HTTP
// client, the openai provider's defaults (from flags and GATEWAY_* variables)
// and the agent profiles. Installed once at start-up, before the provider
// registry is first used (main does it), and read-only afterwards: every const
// access is safe from any thread without a lock.
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/agents/agent_profile.hpp"
#include "core/http/streaming_http_client.hpp"
#include "core/tools/tool_runner.hpp"

namespace agw::core {

struct openai_defaults {
  std::string base_url = "https://api.openai.com/v1";
  std::string api_key;  // never logged
  std::string model = "gpt-4o-mini";
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds idle_timeout{60'000};     // the longest upstream silence mid-answer
  int max_steps = 8;                                  // tool rounds per run before tool_step_limit
  int max_retries = 2;                                // tries after the first, only before the first token
  std::chrono::milliseconds retry_base{250};          // backoff: base, 2×base, 4×base…
  std::chrono::milliseconds retry_after_cap{20'000};  // a longer Retry-After is not waited for
};

struct agent_environment {
  std::shared_ptr<streaming_http_client> http;  // null: the openai provider is unavailable
  // Runs a model's parallel tool calls at once (the session hub's runner is sized for the mock's one at a time).
  std::shared_ptr<tool_runner> tools;
  openai_defaults openai;
  std::vector<agent_profile> profiles;
  std::map<std::string, model_price, std::less<>> prices;  // by model name, besides the profiles' own

  const agent_profile* profile(std::string_view name) const;
};

// Start-up only (before the first request).
void install_agent_environment(std::shared_ptr<const agent_environment> env);
// The installed environment, or an empty one (no client, no profiles).
std::shared_ptr<const agent_environment> current_agent_environment();

}  // namespace agw::core
