#pragma once
// The agent profiles file (JSON; docs/providers.md shows it): named profiles
// and a per-model price table. Read once at start-up; every problem (bad JSON,
// a wrong field, a profile naming an unknown provider or tool) throws
// std::runtime_error naming the profile and field, so the gateway refuses to
// start rather than fail runs later.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/agents/agent_profile.hpp"
#include "core/agents/provider_registry.hpp"
#include "core/tools/tool_registry.hpp"

namespace agw::core {

struct agent_profiles {
  std::vector<agent_profile> profiles;
  std::map<std::string, model_price, std::less<>> prices;
};

// A variable's value or nullopt (main passes getenv): resolves api_key_env.
using variable_lookup = std::function<std::optional<std::string>(const std::string&)>;

agent_profiles parse_agent_profiles(std::string_view json_text, const variable_lookup& env);
agent_profiles load_agent_profiles(const std::string& path, const variable_lookup& env);

// Refuses a profile whose provider is not registered, whose config the provider
// refuses, or that allows a tool the registry does not have.
void check_agent_profiles(const agent_profiles& loaded, const provider_registry& providers, const tool_registry& tools);

}  // namespace agw::core
