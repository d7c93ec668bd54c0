#include "core/agents/provider_registry.hpp"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <string>
#include <vector>

#include "core/agents/mock_agent.hpp"
#include "core/agents/unavailable_agent.hpp"
#include "core/api_error.hpp"
#include "core/session_request.hpp"

namespace {

using agw::core::api_error;
using agw::core::builtin_provider_registry;
using agw::core::error_code;
using agw::core::provider;
using agw::core::provider_registry;
using agw::core::session_record;

boost::json::object config(const std::string& text) { return boost::json::parse(text).as_object(); }

session_record session_with(const std::string& config_text) {
  session_record s;
  s.config = config(config_text);
  return s;
}

// The message of the bad_request `f` throws, or "" when it does not throw.
template <class F>
std::string bad_request_message(F f) {
  try {
    f();
  } catch (const api_error& e) {
    CHECK(e.code() == error_code::bad_request);
    return e.what();
  }
  return "";
}

// A provider that records which configs its validator saw.
provider recording_provider(std::string name, std::vector<std::string>& seen) {
  provider p;
  p.name = name;
  p.validate = [name, &seen](const boost::json::object& c) {
    seen.push_back(name);
    if (c.contains("reject")) throw api_error(error_code::bad_request, "config." + name + " refused");
  };
  p.make = [](const session_record&) { return std::make_shared<agw::core::mock_agent>(); };
  return p;
}

}  // namespace

TEST_CASE("provider_registry: the built-in registry has mock (the default) and openai") {
  const auto& registry = builtin_provider_registry();
  REQUIRE(registry.providers().size() == 2);
  CHECK(registry.providers()[0].name == "mock");
  CHECK(registry.providers()[1].name == "openai");
  CHECK(provider_registry::default_provider == "mock");
  CHECK(&registry.select(config("{}")) == registry.find("mock"));
  CHECK(&registry.select(config(R"({"provider":"mock"})")) == registry.find("mock"));
  CHECK(&registry.select(config(R"({"provider":"openai"})")) == registry.find("openai"));
}

TEST_CASE("provider_registry: the agent for a session") {
  const auto& registry = builtin_provider_registry();
  SUBCASE("no provider and provider mock get the one shared mock agent") {
    auto a = registry.make_agent(session_with("{}"));
    auto b = registry.make_agent(session_with(R"({"provider":"mock","model":"m"})"));
    CHECK(dynamic_cast<agw::core::mock_agent*>(a.get()) != nullptr);
    CHECK(a == b);
  }
  SUBCASE("openai, unknown and malformed providers get an agent that fails the run") {
    for (const char* text : {R"({"provider":"openai"})", R"({"provider":"claude-direct"})", R"({"provider":1})"}) {
      CAPTURE(text);
      auto a = registry.make_agent(session_with(text));
      CHECK(dynamic_cast<agw::core::unavailable_agent*>(a.get()) != nullptr);
    }
  }
}

TEST_CASE("provider_registry: unknown or malformed provider names are refused with today's message") {
  const auto& registry = builtin_provider_registry();
  for (const char* text :
       {R"({"provider":"other"})", R"({"provider":1})", R"({"provider":null})", R"({"provider":""})", R"({"provider":"Mock"})"}) {
    CAPTURE(text);
    CHECK(bad_request_message([&] { registry.select(config(text)); }) == R"(config.provider must be "mock" or "openai")");
    CHECK(bad_request_message([&] { agw::core::validate_config(config(text)); }) ==
          R"(config.provider must be "mock" or "openai")");
  }
}

TEST_CASE("provider_registry: validate_config dispatches to the named provider's validator") {
  SUBCASE("mock options are checked for mock and, as before, for openai") {
    for (const char* text : {R"({"mock":{"tokens":-1}})", R"({"provider":"mock","mock":{"tokens":-1}})",
                             R"({"provider":"openai","mock":{"tokens":-1}})"}) {
      CAPTURE(text);
      CHECK(bad_request_message([&] { agw::core::validate_config(config(text)); }).starts_with("config.mock.tokens"));
    }
  }
  SUBCASE("the shared fields come before the provider's options") {
    CHECK(bad_request_message([] {
            agw::core::validate_config(config(R"({"provider":"openai","temperature":3,"mock":1})"));
          }).starts_with("config.temperature"));
    CHECK(bad_request_message([] { agw::core::validate_config(config(R"({"model":1,"mock":{"tokens":-1}})")); }) ==
          "config.model must be a string");
  }
  SUBCASE("valid configs pass") {
    for (const char* text : {"{}", R"({"provider":"openai","model":"gpt-4o-mini","temperature":0.2,"max_tokens":64})",
                             R"({"provider":"mock","mock":{"tokens":3}})"}) {
      CAPTURE(text);
      CHECK_NOTHROW(agw::core::validate_config(config(text)));
    }
  }
}

TEST_CASE("provider_registry: a registry of its own selects, validates and lists in registration order") {
  std::vector<std::string> seen;
  provider_registry registry;
  registry.add(recording_provider("mock", seen));
  registry.add(recording_provider("alpha", seen));
  registry.add(recording_provider("beta", seen));

  registry.select(config(R"({"provider":"beta"})")).validate(config("{}"));
  registry.select(config("{}")).validate(config("{}"));
  CHECK(seen == std::vector<std::string>{"beta", "mock"});
  CHECK(bad_request_message([&] { registry.select(config(R"({"provider":"alpha"})")).validate(config(R"({"reject":1})")); }) ==
        "config.alpha refused");
  CHECK(bad_request_message([&] { registry.select(config(R"({"provider":"gamma"})")); }) ==
        R"(config.provider must be "mock", "alpha" or "beta")");

  CHECK_THROWS_AS(registry.add(recording_provider("alpha", seen)), std::invalid_argument);
  CHECK_THROWS_AS(registry.add(provider{}), std::invalid_argument);
}
