#include "core/agents/agent_environment.hpp"

namespace agw::core {

namespace {

std::shared_ptr<const agent_environment>& installed() {
  static std::shared_ptr<const agent_environment> env = std::make_shared<agent_environment>();
  return env;
}

}  // namespace

const agent_profile* agent_environment::profile(std::string_view name) const {
  for (const auto& p : profiles)
    if (p.name == name) return &p;
  return nullptr;
}

void install_agent_environment(std::shared_ptr<const agent_environment> env) { installed() = std::move(env); }

std::shared_ptr<const agent_environment> current_agent_environment() { return installed(); }

}  // namespace agw::core
