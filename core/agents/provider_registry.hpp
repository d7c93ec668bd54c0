#pragma once
// Which providers a session's config.provider may name, how each validates its
// options, and how each makes the agent for a session. A provider_registry owns
// its provider entries (and, through their factories, any shared agent).
// Thread-safety: add() is for start-up only, before any request is served;
// afterwards the registry is read-only and every const method may be called
// from any thread without a lock. Nothing here runs on an executor: validation
// runs on the request's connection strand, make_agent on the caller's.
#include <boost/json/object.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/agents/agent.hpp"
#include "core/session.hpp"

namespace agw::core {

struct provider {
  std::string name;  // the value of config.provider
  // Checks the provider's own options in a session's config (the whole config
  // object, so a provider may read shared fields). Throws
  // api_error(bad_request) naming the offending field.
  std::function<void(const boost::json::object& config)> validate;
  // The agent for one run of `session`; a stateless provider returns one shared instance.
  std::function<std::shared_ptr<agent>(const session_record& session)> make;
};

class provider_registry {
 public:
  static constexpr std::string_view default_provider = "mock";  // when config.provider is absent

  // Start-up only. Throws std::invalid_argument on an empty or duplicate name.
  void add(provider p);

  const provider* find(std::string_view name) const;
  const std::vector<provider>& providers() const { return providers_; }

  // The provider `config` names (the default one when it names none). Throws
  // api_error(bad_request) when config.provider is not a string or not registered.
  const provider& select(const boost::json::object& config) const;

  // The agent for a stored session. Never throws for an unknown or malformed
  // config.provider (stored before a provider was removed, say): that session
  // gets an agent whose run fails with provider_unavailable.
  std::shared_ptr<agent> make_agent(const session_record& session) const;

 private:
  std::vector<provider> providers_;  // registration order: the 400 message lists them in it
};

// The providers this build has: "mock" (the default) and "openai" (through the
// installed agent environment's HTTP client; without one its runs fail with
// provider_unavailable). A session that names no provider runs on its agent
// profile's (agent_environment.hpp), else on the default.
provider_registry make_builtin_provider_registry();

// The process's registry, built once on first use and read-only afterwards:
// session validation (validate_config) and session_hub both ask it, so a config
// that validates always names a provider the hub can make.
const provider_registry& builtin_provider_registry();

}  // namespace agw::core
