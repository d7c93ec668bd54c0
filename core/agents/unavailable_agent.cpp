#include "core/agents/unavailable_agent.hpp"

#include "core/runs/run_context.hpp"

namespace agw::core {

boost::asio::awaitable<void> unavailable_agent::run(run_context& ctx) {
  ctx.fail("provider_unavailable", "provider '" + provider_ + "' is not available in this build");
  co_return;
}

}  // namespace agw::core
