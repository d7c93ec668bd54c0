#pragma once
// A named agent profile (agent_name picks one): the provider and the model
// settings a session starts from, the profile's system prompt, the tools it may
// call and the model's price. A session's own config overrides provider, model,
// temperature and max_tokens (and provider options) per the contract; the rest
// is the operator's only (where the model lives, its key, its prompt).
// Plain data, built at start-up and read-only afterwards.
#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <vector>

namespace agw::core {

struct model_price {
  double input_per_million = 0;   // currency units per million prompt tokens
  double output_per_million = 0;  // per million completion tokens
};

struct agent_profile {
  std::string name;
  // provider, model, temperature, max_tokens and provider options, as a session's config spells them.
  boost::json::object config;
  std::string base_url;     // "" = the process default (--openai-base-url)
  std::string api_key;      // "" = api_key_env, else the process default
  std::string api_key_env;  // the variable holding the key (read at start-up)
  std::string system_prompt;
  std::optional<std::vector<std::string>> tools;  // none = every registered tool
  std::optional<model_price> price;
  std::vector<std::string> labels;  // added to every session created for this profile (docs/sessions.md)
  std::string event_webhook_url;    // "" = none; a session created for the profile without its own gets it
};

// The session's config over the profile's: every key the session sets wins.
boost::json::object effective_config(const agent_profile* profile, const boost::json::object& session_config);

}  // namespace agw::core
