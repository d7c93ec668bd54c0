#include "core/agents/agent_profiles.hpp"

#include <doctest/doctest.h>

#include "core/agents/mock_agent.hpp"
#include "core/agents/openai/run_plan.hpp"
#include "core/agents/unavailable_agent.hpp"

using namespace agw::core;

namespace {

std::optional<std::string> no_variables(const std::string&) { return std::nullopt; }

std::string refusal(const std::string& text) {
  try {
    auto loaded = parse_agent_profiles(text, no_variables);
    auto tools = make_builtin_tools();
    check_agent_profiles(loaded, builtin_provider_registry(), tools);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("agent_profiles: a profile file is read into profiles and prices") {
  auto loaded = parse_agent_profiles(R"({"prices":{"m":{"input":1.5,"output":3}},
      "profiles":{"coder":{"provider":"openai","model":"m","temperature":0.1,"max_tokens":9,"base_url":"http://127.0.0.1:1/v1",
                           "api_key_env":"K","system_prompt":"S","tools":["calculator"],"price":{"input":1,"output":2}}}})",
                                     [](const std::string& name) -> std::optional<std::string> {
                                       return name == "K" ? std::optional<std::string>("secret") : std::nullopt;
                                     });
  REQUIRE(loaded.profiles.size() == 1);
  const auto& p = loaded.profiles[0];
  CHECK(p.name == "coder");
  CHECK(p.config.at("provider") == "openai");
  CHECK(p.config.at("max_tokens") == 9);
  CHECK(p.base_url == "http://127.0.0.1:1/v1");
  CHECK(p.api_key == "secret");
  CHECK(p.system_prompt == "S");
  CHECK(p.tools == std::vector<std::string>{"calculator"});
  CHECK(p.price->output_per_million == 2);
  CHECK(loaded.prices.at("m").input_per_million == 1.5);
}

TEST_CASE("agent_profiles: refused with the profile and the field named") {
  CHECK(refusal(R"({"profiles":{"a":{"provider":"openai","tools":["calculator"]}}})").empty());
  CHECK(refusal(R"({"profiles":{"a":{"tools":["rm_rf"]}}})").find("unknown tool 'rm_rf'") != std::string::npos);
  CHECK(refusal(R"({"profiles":{"a":{"provider":"nope"}}})").find("profile 'a'") != std::string::npos);
  CHECK(refusal(R"({"profiles":{"a":{"temperature":7}}})").find("temperature") != std::string::npos);
  CHECK(refusal(R"({"profiles":{"a":{"colour":"red"}}})").find("unknown field 'colour'") != std::string::npos);
  CHECK(refusal(R"({"profiles":{"a":{"base_url":"ftp://x"}}})").find("base_url") != std::string::npos);
  CHECK(refusal(R"({"profiles":{"a":{"price":{"input":-1,"output":1}}}})").find("price") != std::string::npos);
  CHECK(refusal(R"({"profile":{}})").find("unknown field") != std::string::npos);
  CHECK(refusal("[").find("not JSON") != std::string::npos);
}

TEST_CASE("agent_profiles: the session's config wins over the profile's; the run plan follows") {
  auto loaded = parse_agent_profiles(
      R"({"prices":{"big":{"input":2,"output":4}},"profiles":{"p":{"provider":"openai","model":"small","system_prompt":"S",
          "tools":["current_time"],"price":{"input":1,"output":1}}}})",
      no_variables);
  const auto& profile = loaded.profiles[0];
  agent_environment env;
  env.openai.base_url = "http://127.0.0.1:9/v1/";
  env.prices = loaded.prices;
  auto tools = make_builtin_tools();

  auto plan = openai::make_run_plan(env, &profile, effective_config(&profile, {}), tools);
  CHECK(plan.chat.model == "small");
  CHECK(plan.url == "http://127.0.0.1:9/v1/chat/completions");
  CHECK(plan.chat.system_prompt == "S");
  REQUIRE(plan.tools.size() == 1);
  CHECK(plan.tools[0]->name() == "current_time");
  CHECK(openai::estimated_cost(*plan.price, 1'000'000, 2'000'000) == doctest::Approx(3.0));

  auto overridden = openai::make_run_plan(env, &profile, effective_config(&profile, {{"model", "big"}}), tools);
  CHECK(overridden.chat.model == "big");
  CHECK(openai::estimated_cost(*overridden.price, 1'000'000, 1'000'000) == doctest::Approx(6.0));

  auto bare = openai::make_run_plan(env, nullptr, {}, tools);
  CHECK(bare.chat.model == env.openai.model);
  CHECK(bare.tools.size() == 2);
  CHECK_FALSE(bare.price);
}

TEST_CASE("agent_profiles: a session that names no provider runs on its profile's; its own config.provider wins") {
  auto env = std::make_shared<agent_environment>();
  env->profiles = parse_agent_profiles(R"({"profiles":{"remote":{"provider":"openai"}}})", no_variables).profiles;
  install_agent_environment(env);
  const auto& registry = builtin_provider_registry();
  session_record on_profile;
  on_profile.agent_name = "remote";
  // openai without an upstream client in this process: the stand-in agent.
  CHECK(dynamic_cast<unavailable_agent*>(registry.make_agent(on_profile).get()));
  session_record overridden = on_profile;
  overridden.config = {{"provider", "mock"}};
  CHECK(dynamic_cast<mock_agent*>(registry.make_agent(overridden).get()));
  session_record other;
  other.agent_name = "nobody";
  CHECK(dynamic_cast<mock_agent*>(registry.make_agent(other).get()));
  install_agent_environment(std::make_shared<agent_environment>());
}
