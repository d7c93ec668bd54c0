#pragma once
// The `openai` provider's agent: an OpenAI-compatible chat-completions model
// (hosted API, vLLM, llama.cpp's server, Ollama) streamed into the run, with a
// tool loop: the calls of each answer run through the tool registry, their
// results go back to the model, until it answers without tools or the step
// limit is reached (error tool_step_limit). One per run; holds the process's
// agent environment (and through it the profile) alive. Runs on the session's strand.
#include <memory>

#include "core/agents/agent.hpp"
#include "core/agents/agent_environment.hpp"

namespace agw::core::openai {

class openai_agent final : public agent {
 public:
  // `profile` belongs to `env` (or is null: the process defaults).
  openai_agent(std::shared_ptr<const agent_environment> env, const agent_profile* profile)
      : env_(std::move(env)), profile_(profile) {}
  boost::asio::awaitable<void> run(run_context& ctx) override;

 private:
  std::shared_ptr<const agent_environment> env_;
  const agent_profile* profile_;
};

}  // namespace agw::core::openai
