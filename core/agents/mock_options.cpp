#include "core/agents/mock_options.hpp"

#include "core/api_error.hpp"

namespace agw::core {
namespace {

[[noreturn]] void bad(const std::string& message) { throw api_error(error_code::bad_request, message); }

std::int64_t integer_in(const boost::json::value& v, const char* name, std::int64_t min, std::int64_t max) {
  std::int64_t n = 0;
  if (v.is_int64())
    n = v.get_int64();
  else if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(max))
    n = static_cast<std::int64_t>(v.get_uint64());
  else
    bad(std::string("config.mock.") + name + " must be an integer");
  if (n < min || n > max)
    bad(std::string("config.mock.") + name + " must be from " + std::to_string(min) + " to " + std::to_string(max));
  return n;
}

}  // namespace

mock_options parse_mock_options(const boost::json::value* mock) {
  mock_options out;
  if (!mock || mock->is_null()) return out;
  if (!mock->is_object()) bad("config.mock must be an object");
  const auto& o = mock->get_object();
  if (auto* v = o.if_contains("tokens")) out.tokens = integer_in(*v, "tokens", 0, 1'000'000);
  if (auto* v = o.if_contains("tokens_per_second")) {
    if (!v->is_number()) bad("config.mock.tokens_per_second must be a number");
    double rate = v->to_number<double>();
    if (!(rate > 0 && rate <= 1e6)) bad("config.mock.tokens_per_second must be above 0 and at most 1000000");
    out.tokens_per_second = rate;
  }
  if (auto* v = o.if_contains("fail_after")) out.fail_after = integer_in(*v, "fail_after", 0, 1'000'000);
  if (auto* v = o.if_contains("think_ms")) out.think_ms = integer_in(*v, "think_ms", 0, 600'000);
  if (auto* v = o.if_contains("tool_calls")) {
    if (!v->is_array()) bad("config.mock.tool_calls must be a list");
    if (v->get_array().size() > 100) bad("config.mock.tool_calls may have at most 100 entries");
    for (const auto& call : v->get_array()) {
      if (!call.is_object()) bad("config.mock.tool_calls entries must be objects");
      const auto* name = call.get_object().if_contains("name");
      if (!name || !name->is_string() || name->get_string().empty())
        bad("config.mock.tool_calls[].name must be a non-empty string");
      mock_tool_call c{std::string(name->get_string()), {}};
      if (const auto* args = call.get_object().if_contains("args")) {
        if (!args->is_object()) bad("config.mock.tool_calls[].args must be an object");
        c.args = args->get_object();
      }
      out.tool_calls.push_back(std::move(c));
    }
  }
  if (auto* v = o.if_contains("echo_variables")) {
    if (!v->is_bool()) bad("config.mock.echo_variables must be a boolean");
    out.echo_variables = v->get_bool();
  }
  if (auto* v = o.if_contains("plan")) {
    if (!v->is_array()) bad("config.mock.plan must be a list of strings");
    if (v->get_array().size() > 100) bad("config.mock.plan may have at most 100 steps");
    for (const auto& step : v->get_array()) {
      if (!step.is_string()) bad("config.mock.plan must be a list of strings");
      out.plan.emplace_back(step.get_string());
    }
  }
  return out;
}

}  // namespace agw::core
