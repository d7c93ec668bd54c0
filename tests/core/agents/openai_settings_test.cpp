// The openai provider's settings (a contiguous block in core/settings_parser.cpp):
// each flag and its GATEWAY_* variable, and the values refused.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "core/settings_parser.hpp"

namespace {

using agw::core::parse_command_line;
using agw::core::parse_result;

parse_result parse(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
  return parse_command_line(args, [&env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
}

}  // namespace

TEST_CASE("openai settings: flags and variables set the provider's limits, CA file and profiles file") {
  auto flags = parse({"--openai-ca-file=/ca.pem", "--openai-connect-timeout=2.5", "--openai-idle-timeout=0.5",
                      "--openai-max-steps=3", "--openai-max-retries=0", "--agent-profiles=/p.json"});
  REQUIRE(flags.value);
  const auto& s = flags.value->config;
  CHECK(s.openai_ca_file == "/ca.pem");
  CHECK(s.openai_connect_timeout.count() == doctest::Approx(2.5));
  CHECK(s.openai_idle_timeout.count() == doctest::Approx(0.5));
  CHECK(s.openai_max_steps == 3);
  CHECK(s.openai_max_retries == 0);
  CHECK(s.agent_profiles_file == "/p.json");

  auto env =
      parse({}, {{"GATEWAY_OPENAI_MAX_STEPS", "5"}, {"GATEWAY_AGENT_PROFILES", "/q.json"}, {"GATEWAY_OPENAI_IDLE_TIMEOUT", "7"}});
  REQUIRE(env.value);
  CHECK(env.value->config.openai_max_steps == 5);
  CHECK(env.value->config.agent_profiles_file == "/q.json");
  CHECK(env.value->config.openai_idle_timeout.count() == doctest::Approx(7.0));

  auto defaults = parse({});
  REQUIRE(defaults.value);
  CHECK(defaults.value->config.openai_max_steps == 8);
  CHECK(defaults.value->config.openai_max_retries == 2);
  CHECK(defaults.value->config.openai_idle_timeout.count() == doctest::Approx(60.0));
}

TEST_CASE("openai settings: out-of-range values are refused naming the flag") {
  for (const std::string bad : {"--openai-max-steps=0", "--openai-max-retries=11", "--openai-idle-timeout=0",
                                "--openai-idle-timeout=x", "--openai-connect-timeout=-1"}) {
    CAPTURE(bad);
    auto r = parse({bad});
    CHECK_FALSE(r.value);
    CHECK(r.error.find(bad.substr(2, bad.find('=') - 2)) != std::string::npos);
  }
}
