#include "core/agents/mock_options.hpp"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <string>

#include "core/api_error.hpp"

namespace {

using agw::core::api_error;
using agw::core::error_code;
using agw::core::parse_mock_options;

agw::core::mock_options parse(const std::string& text) {
  const auto v = boost::json::parse(text);
  return parse_mock_options(&v);
}

}  // namespace

TEST_CASE("mock_options: absent or null gives the defaults") {
  for (const char* text : {"null", "{}"}) {
    CAPTURE(text);
    const auto o = parse(text);
    CHECK_FALSE(o.tokens);
    CHECK_FALSE(o.tokens_per_second);
    CHECK(o.tool_calls.empty());
    CHECK_FALSE(o.fail_after);
    CHECK(o.think_ms == 0);
    CHECK(o.plan.empty());
  }
  const auto none = parse_mock_options(nullptr);
  CHECK_FALSE(none.tokens);
}

TEST_CASE("mock_options: valid options") {
  const auto o = parse(R"({"tokens":5,"tokens_per_second":12.5,"fail_after":2,"think_ms":600000,
      "tool_calls":[{"name":"calculator","args":{"expression":"1+1"}},{"name":"current_time"}],
      "plan":["a","b"],"ignored":true})");
  CHECK(o.tokens == 5);
  CHECK(o.tokens_per_second == 12.5);
  CHECK(o.fail_after == 2);
  CHECK(o.think_ms == 600000);
  REQUIRE(o.tool_calls.size() == 2);
  CHECK(o.tool_calls[0].name == "calculator");
  CHECK(o.tool_calls[0].args == boost::json::object{{"expression", "1+1"}});
  CHECK(o.tool_calls[1].name == "current_time");
  CHECK(o.tool_calls[1].args.empty());
  CHECK(o.plan == std::vector<std::string>{"a", "b"});

  // Bounds are inclusive.
  CHECK(parse(R"({"tokens":0})").tokens == 0);
  CHECK(parse(R"({"tokens":1000000})").tokens == 1000000);
  CHECK(parse(R"({"tokens_per_second":1000000})").tokens_per_second == 1e6);
  CHECK(parse(R"({"tokens_per_second":0.001})").tokens_per_second == 0.001);
  CHECK(parse(R"({"fail_after":0})").fail_after == 0);
  CHECK(parse(R"({"plan":[]})").plan.empty());
  CHECK(parse(R"({"tool_calls":[]})").tool_calls.empty());
}

TEST_CASE("mock_options: invalid options name the field") {
  std::string hundred_and_one_steps = "[";
  for (int i = 0; i <= 100; ++i) hundred_and_one_steps += std::string(i ? "," : "") + "\"s\"";
  hundred_and_one_steps += "]";
  std::string hundred_and_one_calls = "[";
  for (int i = 0; i <= 100; ++i) hundred_and_one_calls += std::string(i ? "," : "") + R"({"name":"x"})";
  hundred_and_one_calls += "]";

  const std::vector<std::pair<std::string, std::string>> rows = {
      {"[]", "config.mock"},
      {"5", "config.mock"},
      {"\"fast\"", "config.mock"},
      {R"({"tokens":-1})", "config.mock.tokens"},
      {R"({"tokens":1000001})", "config.mock.tokens"},
      {R"({"tokens":1.5})", "config.mock.tokens"},
      {R"({"tokens":"5"})", "config.mock.tokens"},
      {R"({"tokens":18446744073709551615})", "config.mock.tokens"},
      {R"({"tokens":null})", "config.mock.tokens"},
      {R"({"tokens_per_second":0})", "config.mock.tokens_per_second"},
      {R"({"tokens_per_second":-3})", "config.mock.tokens_per_second"},
      {R"({"tokens_per_second":1000001})", "config.mock.tokens_per_second"},
      {R"({"tokens_per_second":"10"})", "config.mock.tokens_per_second"},
      {R"({"fail_after":-1})", "config.mock.fail_after"},
      {R"({"think_ms":600001})", "config.mock.think_ms"},
      {R"({"think_ms":-5})", "config.mock.think_ms"},
      {R"({"tool_calls":{}})", "config.mock.tool_calls"},
      {R"({"tool_calls":["calculator"]})", "config.mock.tool_calls"},
      {R"({"tool_calls":[{}]})", "config.mock.tool_calls[].name"},
      {R"({"tool_calls":[{"name":""}]})", "config.mock.tool_calls[].name"},
      {R"({"tool_calls":[{"name":5}]})", "config.mock.tool_calls[].name"},
      {R"({"tool_calls":[{"name":"x","args":[1]}]})", "config.mock.tool_calls[].args"},
      {R"({"tool_calls":[{"name":"x","args":"a=1"}]})", "config.mock.tool_calls[].args"},
      {R"({"tool_calls":)" + hundred_and_one_calls + "}", "config.mock.tool_calls"},
      {R"({"plan":"step"})", "config.mock.plan"},
      {R"({"plan":["a",1]})", "config.mock.plan"},
      {R"({"plan":)" + hundred_and_one_steps + "}", "config.mock.plan"},
  };
  for (const auto& [text, mentions] : rows) {
    CAPTURE(text.substr(0, 80));
    try {
      parse(text);
      FAIL("accepted");
    } catch (const api_error& e) {
      CHECK(e.code() == error_code::bad_request);
      CHECK(std::string(e.what()).find(mentions) != std::string::npos);
    }
  }
}
