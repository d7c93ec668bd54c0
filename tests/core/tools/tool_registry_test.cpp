#include "core/tools/tool_registry.hpp"

#include <memory>
#include <string>

#include <doctest/doctest.h>
#include <boost/json/value.hpp>

namespace {

using namespace std::chrono;
using agw::core::tool;
using agw::core::tool_registry;
using agw::core::tool_result;

class fake_tool final : public tool {
 public:
  fake_tool(std::string name, std::string output) : name_(std::move(name)), output_(std::move(output)) {}
  std::string_view name() const override { return name_; }
  std::string_view description() const override { return "fake"; }
  boost::json::object parameters_schema() const override { return {{"type", "object"}}; }
  tool_result invoke(const boost::json::object&) const override { return {output_, 0}; }

 private:
  std::string name_;
  std::string output_;
};

}  // namespace

TEST_CASE("tool_registry: add, find, replace, sorted all") {
  tool_registry registry;
  CHECK(registry.all().empty());
  CHECK(registry.find("x") == nullptr);

  registry.add(std::make_unique<fake_tool>("zeta", "z"));
  registry.add(std::make_unique<fake_tool>("alpha", "a1"));
  registry.add(std::make_unique<fake_tool>("mid", "m"));
  registry.add(std::make_unique<fake_tool>("alpha", "a2"));  // replaces the first alpha
  registry.add(nullptr);                                     // ignored

  const auto all = registry.all();
  REQUIRE(all.size() == 3);
  CHECK(all[0]->name() == "alpha");
  CHECK(all[1]->name() == "mid");
  CHECK(all[2]->name() == "zeta");

  const tool* alpha = registry.find("alpha");
  REQUIRE(alpha != nullptr);
  CHECK(alpha->invoke({}).output == "a2");
  CHECK(registry.find("alph") == nullptr);
  CHECK(registry.find("") == nullptr);
}

TEST_CASE("tool_registry: builtin tools") {
  const auto registry =
      agw::core::make_builtin_tools([] { return sys_days{year{2026} / March / 21} + hours{12} + minutes{34} + seconds{56}; });

  const auto all = registry.all();
  REQUIRE(all.size() == 2);
  CHECK(all[0]->name() == "calculator");
  CHECK(all[1]->name() == "current_time");

  const tool* calc = registry.find("calculator");
  REQUIRE(calc != nullptr);
  CHECK(calc->invoke({{"expression", "2+3*4"}}).output == "14");

  const tool* clock = registry.find("current_time");
  REQUIRE(clock != nullptr);
  CHECK(clock->invoke({{"utc_offset", "+02:00"}}).output == "2026-03-21T14:34:56.000+02:00");

  // Default argument uses the real clock; just check it is wired up.
  const auto real = agw::core::make_builtin_tools();
  REQUIRE(real.find("current_time") != nullptr);
  CHECK(real.find("current_time")->invoke({}).exit_code == 0);
}
