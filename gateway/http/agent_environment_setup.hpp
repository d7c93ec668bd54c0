#pragma once
// Builds the agents' environment at start-up from the settings: the Beast
// upstream client (with the extra CA file), the openai defaults, the agent
// profiles file (checked against the providers and tools this process has).
// Throws std::runtime_error on anything that should stop start-up.
#include <memory>

#include "core/agents/agent_environment.hpp"
#include "core/settings.hpp"
#include "core/tools/tool_registry.hpp"

namespace agw::gateway {

std::shared_ptr<core::agent_environment> make_agent_environment(const core::settings& config, const core::tool_registry& tools);

}  // namespace agw::gateway
