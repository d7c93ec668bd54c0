#include "gateway/http/agent_environment_setup.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "core/agents/agent_profiles.hpp"
#include "gateway/http/beast_streaming_client.hpp"

namespace agw::gateway {

namespace {

std::optional<std::string> variable(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v ? std::optional<std::string>(v) : std::nullopt;
}

std::chrono::milliseconds millis(std::chrono::duration<double> d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d);
}

core::openai_defaults openai_defaults_from(const core::settings& config) {
  core::openai_defaults d;
  d.base_url = config.openai_base_url;
  // The conventional variable too, so an existing OpenAI setup works as is.
  d.api_key = !config.openai_api_key.empty() ? config.openai_api_key : variable("OPENAI_API_KEY").value_or("");
  d.model = config.openai_model;
  d.connect_timeout = millis(config.openai_connect_timeout);
  d.idle_timeout = millis(config.openai_idle_timeout);
  d.max_steps = static_cast<int>(config.openai_max_steps);
  d.max_retries = static_cast<int>(config.openai_max_retries);
  return d;
}

}  // namespace

std::shared_ptr<core::agent_environment> make_agent_environment(const core::settings& config, const core::tool_registry& tools) {
  auto env = std::make_shared<core::agent_environment>();
  beast_streaming_client_options options;
  options.extra_ca_file = config.openai_ca_file;
  options.ca_file_setting = "GATEWAY_OPENAI_CA_FILE";
  env->http = std::make_shared<beast_streaming_client>(options);
  env->openai = openai_defaults_from(config);
  // Four workers: a model's parallel calls run at once, each under the tool time limit.
  env->tools = std::make_shared<core::tool_runner>(tools, 4, config.tool_timeout);
  if (!config.agent_profiles_file.empty()) {
    auto loaded = core::load_agent_profiles(config.agent_profiles_file, variable);
    core::check_agent_profiles(loaded, core::builtin_provider_registry(), tools);
    env->profiles = std::move(loaded.profiles);
    env->prices = std::move(loaded.prices);
    spdlog::info("agent profiles: {} loaded from {}", env->profiles.size(), config.agent_profiles_file);
  }
  return env;
}

}  // namespace agw::gateway
