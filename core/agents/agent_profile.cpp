#include "core/agents/agent_profile.hpp"

namespace agw::core {

boost::json::object effective_config(const agent_profile* profile, const boost::json::object& session_config) {
  if (!profile) return session_config;
  auto out = profile->config;
  for (const auto& [key, value] : session_config) out[key] = value;
  return out;
}

}  // namespace agw::core
