#include "core/agents/openai/run_plan.hpp"

#include <algorithm>

namespace agw::core::openai {

namespace {

std::string chat_completions_url(std::string base) {
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/chat/completions";
}

std::vector<const tool*> allowed_tools(const agent_profile* profile, const tool_registry& registry) {
  auto all = registry.all();
  if (!profile || !profile->tools) return all;
  std::vector<const tool*> out;
  for (const auto* t : all)
    if (std::find(profile->tools->begin(), profile->tools->end(), t->name()) != profile->tools->end()) out.push_back(t);
  return out;
}

}  // namespace

run_plan make_run_plan(const agent_environment& env, const agent_profile* profile, const boost::json::object& config,
                       const tool_registry& tools, const std::vector<client_tool>& client_tools) {
  run_plan plan;
  plan.limits = env.openai;
  const auto* model = config.if_contains("model");
  plan.chat.model = model && model->is_string() ? std::string(model->get_string()) : env.openai.model;
  if (const auto* t = config.if_contains("temperature"); t && t->is_number()) plan.chat.temperature = t->to_number<double>();
  if (const auto* m = config.if_contains("max_tokens"); m && (m->is_int64() || m->is_uint64()))
    plan.chat.max_tokens = m->to_number<std::int64_t>();
  if (profile) plan.chat.system_prompt = profile->system_prompt;
  plan.url = chat_completions_url(profile && !profile->base_url.empty() ? profile->base_url : env.openai.base_url);
  plan.api_key = profile && !profile->api_key.empty() ? profile->api_key : env.openai.api_key;
  plan.tools = allowed_tools(profile, tools);
  // A client tool named like a built-in one takes its place for this run (its client asked for it).
  std::erase_if(plan.tools, [&](const tool* t) { return find_client_tool(client_tools, t->name()) != nullptr; });
  plan.client_tools = client_tools;
  plan.context = parse_context_window(config);
  // The model's own price first (a session may run another model than its profile's).
  if (auto it = env.prices.find(plan.chat.model); it != env.prices.end())
    plan.price = it->second;
  else if (profile && profile->price)
    plan.price = profile->price;
  return plan;
}

double estimated_cost(const model_price& price, std::int64_t input_tokens, std::int64_t output_tokens) {
  return (static_cast<double>(input_tokens) * price.input_per_million +
          static_cast<double>(output_tokens) * price.output_per_million) /
         1e6;
}

}  // namespace agw::core::openai
