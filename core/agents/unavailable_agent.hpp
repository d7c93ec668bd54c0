#pragma once
// Stands in for a provider this build cannot reach: its run fails at once with
// provider_unavailable, so a session naming it gets an error event and a done
// event rather than a hung run. Stateless; runs on the session's strand like
// every agent.
#include <string>

#include "core/agents/agent.hpp"

namespace agw::core {

class unavailable_agent final : public agent {
 public:
  explicit unavailable_agent(std::string provider) : provider_(std::move(provider)) {}
  boost::asio::awaitable<void> run(run_context& ctx) override;

 private:
  std::string provider_;
};

}  // namespace agw::core
