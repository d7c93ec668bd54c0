#include "core/agents/openai/openai_agent.hpp"

#include <boost/json/parse.hpp>

#include "core/agents/openai/parallel_tools.hpp"
#include "core/agents/openai/run_plan.hpp"
#include "core/agents/openai/upstream_step.hpp"
#include "core/agents/session_variables.hpp"
#include "core/runs/run_context.hpp"
#include "core/tools/client_tool.hpp"

namespace agw::core::openai {

namespace net = boost::asio;

namespace {

// A call's arguments as the tool gets them: the model's JSON object, or {} when it
// wrote something else (the tool then reports what is missing, and the model sees it).
boost::json::object parsed_arguments(const std::string& text) {
  boost::system::error_code ec;
  auto v = boost::json::parse(text, ec);
  return !ec && v.is_object() ? std::move(v.get_object()) : boost::json::object{};
}

std::vector<run_context::tool_request> tool_requests(const std::vector<assembled_call>& calls) {
  std::vector<run_context::tool_request> out;
  for (const auto& c : calls) out.push_back({c.id, c.name, parsed_arguments(c.arguments)});
  return out;
}

void add_usage(run_context& ctx, const run_plan& plan, const step_result& step) {
  if (!step.usage) return;
  auto& usage = ctx.usage();
  usage.input_tokens += step.usage->prompt_tokens;
  usage.output_tokens += step.usage->completion_tokens;
  if (plan.price) usage.estimated_cost = estimated_cost(*plan.price, usage.input_tokens, usage.output_tokens);
}

}  // namespace

net::awaitable<void> openai_agent::run(run_context& ctx) {
  auto plan = make_run_plan(*env_, profile_, effective_config(profile_, ctx.config()), ctx.tools(), ctx.client_tools());
  // The session's variables are the agent's to see (its metadata never is).
  plan.chat.system_prompt = with_variables(plan.chat.system_prompt, ctx.session().variables);
  ctx.usage().provider = "openai";
  ctx.usage().model = plan.chat.model;
  for (int round = 0;; ++round) {
    auto stepping = stream_step(ctx, plan, *env_->http);
    const auto step = co_await std::move(stepping);
    add_usage(ctx, plan, step);
    // Tools were called when the assembled calls say so, whatever finish_reason said.
    if (!step.finished || ctx.aborted() || step.calls.empty()) co_return;
    if (round >= plan.limits.max_steps) {
      ctx.fail("tool_step_limit",
               "the model asked for tools after " + std::to_string(plan.limits.max_steps) + " rounds of tool calls");
      co_return;
    }
    // Calls of the client's tools go back to it (after the built-in ones of the same
    // answer ran): the run ends, and the client's results start the next one.
    std::vector<run_context::tool_request> requests;
    std::vector<run_context::tool_request> client_calls;
    for (auto& r : tool_requests(step.calls))
      (find_client_tool(plan.client_tools, r.name) ? client_calls : requests).push_back(std::move(r));
    if (!requests.empty() && env_->tools) {
      auto calling = run_tools_in_parallel(ctx, *env_->tools, requests);
      co_await std::move(calling);
    } else if (!requests.empty()) {
      auto calling = ctx.call_tools(requests);
      co_await std::move(calling);
    }
    if (ctx.aborted()) co_return;
    if (!client_calls.empty()) {
      auto handing = ctx.hand_to_client(client_calls);
      co_await std::move(handing);
      co_return;
    }
    if (ctx.pace_due()) co_await ctx.pace();
    ctx.publish_status("thinking");
  }
}

}  // namespace agw::core::openai
