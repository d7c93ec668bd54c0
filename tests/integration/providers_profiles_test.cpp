// Agent profiles: agent_name picks one (provider, model, system prompt, tools,
// price), the session's config overrides it, and a bad profile stops start-up.
#include <doctest/doctest.h>

#include <fstream>

#include "tests/integration/providers_support.hpp"

using namespace agw::test;
using namespace agw::test::providers;

namespace {

std::string write_profiles(const temp_dir& dir, const std::string& text) {
  const auto path = (dir.path() / "profiles.json").string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("providers: agent_name picks a profile; the session's config overrides its model") {
  fake_upstream_process fake;
  temp_dir dir;
  const auto path = write_profiles(dir, R"({
    "prices": {"tokens:n=4": {"input": 1000000, "output": 2000000}},
    "profiles": {
      "terse": {"provider": "openai", "model": "tokens:n=2", "temperature": 0.5, "max_tokens": 64,
                "system_prompt": "You are terse.", "tools": ["calculator"],
                "price": {"input": 1000000, "output": 1000000}},
      "keyed": {"provider": "openai", "model": "tokens:n=1", "api_key_env": "FAKE_PROFILE_KEY"}
    }})");
  gateway_process gw(openai_env(fake, {{"GATEWAY_AGENT_PROFILES", path}, {"FAKE_PROFILE_KEY", "sk-profile"}}));

  const auto sid = runs::create_session(gw.port(), R"({"agent_name":"terse"})");
  auto r = runs::run_message(gw.port(), sid, "hi");
  CHECK(r->parser.tokens() == "tok0 tok1");
  const auto* usage = r->parser.last("usage");
  REQUIRE(usage);
  // 17 prompt (system + user: 7 each + 3) and 2 completion tokens at one unit per token.
  CHECK(usage->obj().at("estimated_cost").to_number<double>() == doctest::Approx(19.0));
  auto requests = upstream_requests(fake);
  REQUIRE(requests.size() == 1);
  const auto& body = requests[0].at("body").as_object();
  CHECK(body.at("temperature").to_number<double>() == doctest::Approx(0.5));
  CHECK(body.at("max_tokens") == 64);
  CHECK(messages_sent(requests[0])[0].at("role") == "system");
  CHECK(messages_sent(requests[0])[0].at("content") == "You are terse.");
  REQUIRE(body.at("tools").as_array().size() == 1);
  CHECK(body.at("tools").as_array()[0].at("function").at("name") == "calculator");

  // The session's config.model wins over the profile's; the price table prices it (17×1 + 4×2).
  const auto over = runs::create_session(gw.port(), R"({"agent_name":"terse","config":{"model":"tokens:n=4"}})");
  auto o = runs::run_message(gw.port(), over, "hi");
  CHECK(o->parser.tokens() == "tok0 tok1 tok2 tok3");
  CHECK(o->parser.last("usage")->obj().at("estimated_cost").to_number<double>() == doctest::Approx(25.0));

  // No price for its model: estimated_cost is null, not 0.
  const auto keyed = runs::create_session(gw.port(), R"({"agent_name":"keyed"})");
  auto k = runs::run_message(gw.port(), keyed, "hi");
  REQUIRE(k->parser.last("usage"));
  CHECK(k->parser.last("usage")->obj().at("estimated_cost").is_null());
  CHECK(upstream_requests(fake).back().at("authorization") == "Bearer sk-profile");

  // No profile named: the default (mock) agent, no file needed.
  const auto plain = runs::create_session(gw.port(), R"({"config":{"mock":{"tokens":1}}})");
  CHECK(runs::run_message(gw.port(), plain, "hi")->parser.last("usage")->field("provider") == "mock");
}

TEST_CASE("providers: a profile naming an unknown tool or provider stops start-up") {
  temp_dir dir;
  for (const std::string text :
       {R"({"profiles":{"x":{"provider":"openai","tools":["no_such_tool"]}}})", R"({"profiles":{"x":{"provider":"nope"}}})",
        R"({"profiles":{"x":{"colour":"red"}}})", "{not json"}) {
    CAPTURE(text);
    const auto path = write_profiles(dir, text);
    auto result = run_gateway_command({}, {{"GATEWAY_AGENT_PROFILES", path}}, std::chrono::seconds(20));
    CHECK_FALSE(result.timed_out);
    CHECK(result.status != 0);
    CHECK(result.output.find("agent profiles") != std::string::npos);
  }
}
