#include "core/agents/provider_registry.hpp"

#include <stdexcept>

#include "core/agents/agent_environment.hpp"
#include "core/agents/mock_agent.hpp"
#include "core/agents/mock_options.hpp"
#include "core/agents/openai/openai_agent.hpp"
#include "core/agents/unavailable_agent.hpp"
#include "core/api_error.hpp"

namespace agw::core {
namespace {

// "\"a\"", "\"a\" or \"b\"", "\"a\", \"b\" or \"c\"": the names a 400 lists.
std::string quoted_choices(const std::vector<provider>& providers) {
  std::string out;
  for (std::size_t i = 0; i < providers.size(); ++i) {
    if (i > 0) out += i + 1 == providers.size() ? " or " : ", ";
    out += "\"" + providers[i].name + "\"";
  }
  return out;
}

provider mock_provider() {
  // Stateless: every session shares one instance.
  auto shared = std::make_shared<mock_agent>();
  provider p;
  p.name = "mock";
  p.validate = [](const boost::json::object& config) { parse_mock_options(config.if_contains("mock")); };
  p.make = [shared](const session_record&) -> std::shared_ptr<agent> { return shared; };
  return p;
}

// OpenAI-compatible chat completions through the process's upstream client. Without
// one (a build or test that installed no agent environment) its runs fail with
// provider_unavailable, as before the provider existed.
provider openai_provider() {
  provider p;
  p.name = "openai";
  // config.mock has always been checked whatever the provider: the same configs
  // are accepted and refused as before.
  p.validate = [](const boost::json::object& config) { parse_mock_options(config.if_contains("mock")); };
  p.make = [](const session_record& session) -> std::shared_ptr<agent> {
    auto env = current_agent_environment();
    if (!env->http) return std::make_shared<unavailable_agent>("openai");
    const auto* profile = env->profile(session.agent_name);
    return std::make_shared<openai::openai_agent>(std::move(env), profile);
  };
  return p;
}

// The provider a session runs on: its config's, else its profile's, else the default.
std::string provider_name(const session_record& session) {
  const auto* named = session.config.if_contains("provider");
  if (!named) {
    const auto* profile = current_agent_environment()->profile(session.agent_name);
    named = profile ? profile->config.if_contains("provider") : nullptr;
  }
  return !named ? std::string(provider_registry::default_provider) : named->is_string() ? std::string(named->get_string()) : "?";
}

}  // namespace

void provider_registry::add(provider p) {
  if (p.name.empty()) throw std::invalid_argument("provider_registry: a provider needs a name");
  if (find(p.name)) throw std::invalid_argument("provider_registry: provider '" + p.name + "' is registered twice");
  if (!p.validate || !p.make) throw std::invalid_argument("provider_registry: provider '" + p.name + "' is incomplete");
  providers_.push_back(std::move(p));
}

const provider* provider_registry::find(std::string_view name) const {
  for (const auto& p : providers_)
    if (p.name == name) return &p;
  return nullptr;
}

const provider& provider_registry::select(const boost::json::object& config) const {
  const auto* named = config.if_contains("provider");
  const provider* p = nullptr;
  if (!named)
    p = find(default_provider);
  else if (named->is_string())
    p = find(named->get_string());
  if (!p) throw api_error(error_code::bad_request, "config.provider must be " + quoted_choices(providers_));
  return *p;
}

std::shared_ptr<agent> provider_registry::make_agent(const session_record& session) const {
  const auto name = provider_name(session);
  if (const auto* p = find(name)) return p->make(session);
  return std::make_shared<unavailable_agent>(name);
}

provider_registry make_builtin_provider_registry() {
  provider_registry registry;
  registry.add(mock_provider());
  registry.add(openai_provider());
  return registry;
}

const provider_registry& builtin_provider_registry() {
  static const provider_registry registry = make_builtin_provider_registry();
  return registry;
}

}  // namespace agw::core
