#pragma once
// The built-in deterministic agent (config.provider "mock", the default): the
// same conversation and options give the same events. See the contract's Agents.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/agents/agent.hpp"

namespace agw::core {

class mock_agent final : public agent {
 public:
  boost::asio::awaitable<void> run(run_context& ctx) override;
};

// The tokens the mock streams for `content` and its options: the words of the
// content (each but the first with its leading space), or `count` numbered tokens.
std::vector<std::string> mock_tokens(const std::string& content, std::optional<std::int64_t> count);

}  // namespace agw::core
