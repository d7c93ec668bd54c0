#include "core/agents/openai/parallel_tools.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/ids.hpp"

namespace agw::core::openai {

namespace net = boost::asio;

namespace {

// The calls in flight: each completion fills its slot; the last one opens the latch.
// Shared by the waiting coroutine and the completions, all on the session's strand.
struct in_flight {
  explicit in_flight(net::any_io_executor ex, std::size_t n) : outcomes(n), remaining(n), latch(ex) {}
  std::vector<tool_outcome> outcomes;
  std::size_t remaining;
  net::steady_timer latch;
};

message_record base_message(run_context& ctx, std::string role) {
  message_record m;
  m.id = new_uuid();
  m.session_id = ctx.session().id;
  m.role = std::move(role);
  m.created_at_ms = ctx.time().wall_ms();
  m.seq = static_cast<std::int64_t>(ctx.conversation().messages.size() + 1);
  return m;
}

}  // namespace

net::awaitable<std::vector<tool_outcome>> run_concurrently(tool_runner& runner,
                                                           const std::vector<run_context::tool_request>& calls) {
  if (calls.empty()) co_return std::vector<tool_outcome>{};
  const auto executor = co_await net::this_coro::executor;
  auto state = std::make_shared<in_flight>(executor, calls.size());
  state->latch.expires_at(net::steady_timer::time_point::max());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    auto done = [state, i](std::exception_ptr, tool_outcome outcome) {
      state->outcomes[i] = std::move(outcome);
      if (--state->remaining == 0) state->latch.cancel();
    };
    net::co_spawn(executor, runner.run(calls[i].name, calls[i].args), std::move(done));
  }
  auto waiting = state->latch.async_wait(net::as_tuple(net::use_awaitable));
  co_await std::move(waiting);
  co_return std::move(state->outcomes);
}

net::awaitable<std::vector<tool_outcome>> run_tools_in_parallel(run_context& ctx, tool_runner& runner,
                                                                const std::vector<run_context::tool_request>& calls) {
  if (ctx.pace_due()) co_await ctx.pace();
  ctx.publish_status("tool");
  auto asked = base_message(ctx, "assistant");
  asked.parent_id = ctx.user_message_id();
  for (const auto& c : calls) asked.tool_calls.push_back({{"id", c.id}, {"name", c.name}, {"args", c.args}});
  ctx.conversation().messages.push_back(asked);
  for (const auto& c : calls) {
    if (ctx.pace_due()) co_await ctx.pace();
    ctx.publish_tool_call(c.id, c.name, c.args);
  }
  auto running = run_concurrently(runner, calls);
  auto outcomes = co_await std::move(running);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (ctx.pace_due()) co_await ctx.pace();
    ctx.publish_tool_result(calls[i].id, outcomes[i].result.output, outcomes[i].result.exit_code);
    auto result = base_message(ctx, "tool");
    result.content = outcomes[i].result.output;
    result.tool_call_id = calls[i].id;
    result.parent_id = asked.id;
    result.status = outcomes[i].status == tool_outcome::kind::ok ? "complete" : "error";
    ctx.conversation().messages.push_back(std::move(result));
  }
  co_await ctx.checkpoint();
  co_return outcomes;
}

}  // namespace agw::core::openai
