#include "core/tools/current_time.hpp"

#include <chrono>
#include <string>

#include <doctest/doctest.h>
#include <boost/json/value.hpp>

namespace {

using namespace std::chrono;
using agw::core::current_time;

// 2026-03-21T12:34:56.123Z (plus sub-millisecond noise that must be truncated).
system_clock::time_point fixed_now() {
  return sys_days{year{2026} / March / 21} + hours{12} + minutes{34} + seconds{56} + milliseconds{123} + microseconds{999};
}

struct offset_case {
  const char* offset;
  const char* output;
  int exit_code;
};

const offset_case cases[] = {
    {"Z", "2026-03-21T12:34:56.123Z", 0},
    {"z", "2026-03-21T12:34:56.123Z", 0},
    {"+00:00", "2026-03-21T12:34:56.123+00:00", 0},
    {"-00:00", "2026-03-21T12:34:56.123+00:00", 0},
    {"+02:00", "2026-03-21T14:34:56.123+02:00", 0},
    {"-05:30", "2026-03-21T07:04:56.123-05:30", 0},
    {"+05:45", "2026-03-21T18:19:56.123+05:45", 0},
    {"+14:00", "2026-03-22T02:34:56.123+14:00", 0},  // crosses midnight forwards
    {"-14:00", "2026-03-20T22:34:56.123-14:00", 0},  // crosses midnight backwards
    {"+15:00", nullptr, 1},
    {"+14:01", nullptr, 1},
    {"-14:30", nullptr, 1},
    {"+02:60", nullptr, 1},
    {"2:00", nullptr, 1},
    {"02:00", nullptr, 1},
    {"+2:00", nullptr, 1},
    {"+0200", nullptr, 1},
    {"+02:00 ", nullptr, 1},
    {"UTC", nullptr, 1},
    {"", nullptr, 1},
};

}  // namespace

TEST_CASE("current_time: offset table") {
  const current_time tool(fixed_now);
  for (const auto& c : cases) {
    const std::string offset = c.offset;
    CAPTURE(offset);
    const auto r = tool.invoke({{"utc_offset", c.offset}});
    CHECK(r.exit_code == c.exit_code);
    if (c.output != nullptr) {
      CHECK(r.output == std::string(c.output));
    } else {
      CHECK(r.output.find("invalid utc_offset") != std::string::npos);
    }
  }
}

TEST_CASE("current_time: defaults to UTC") {
  const current_time tool(fixed_now);
  auto r = tool.invoke({});
  CHECK(r.exit_code == 0);
  CHECK(r.output == "2026-03-21T12:34:56.123Z");

  r = tool.invoke({{"utc_offset", nullptr}});  // explicit null means "not given"
  CHECK(r.exit_code == 0);
  CHECK(r.output == "2026-03-21T12:34:56.123Z");
}

TEST_CASE("current_time: non-string offset") {
  const current_time tool(fixed_now);
  for (const auto& bad : {boost::json::value(2), boost::json::value(true), boost::json::value(boost::json::array{"+02:00"})}) {
    const auto r = tool.invoke({{"utc_offset", bad}});
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("must be a string") != std::string::npos);
  }
}

TEST_CASE("current_time: calendar edge cases") {
  SUBCASE("leap day and year rollover") {
    const current_time tool([] { return sys_days{year{2024} / December / 31} + hours{23} + minutes{30}; });
    CHECK(tool.invoke({{"utc_offset", "+01:00"}}).output == "2025-01-01T00:30:00.000+01:00");
    const current_time leap([] { return sys_days{year{2024} / March / 1} + minutes{10}; });
    CHECK(leap.invoke({{"utc_offset", "-01:00"}}).output == "2024-02-29T23:10:00.000-01:00");
  }
  SUBCASE("before the epoch") {
    const current_time tool([] { return sys_days{year{1969} / December / 31} + hours{23} + milliseconds{5}; });
    CHECK(tool.invoke({}).output == "1969-12-31T23:00:00.005Z");
  }
  SUBCASE("epoch") {
    const current_time tool([] { return system_clock::time_point{}; });
    CHECK(tool.invoke({}).output == "1970-01-01T00:00:00.000Z");
  }
}

TEST_CASE("current_time: default clock and metadata") {
  const current_time tool;  // real clock: only check the shape
  const auto r = tool.invoke({});
  CHECK(r.exit_code == 0);
  REQUIRE(r.output.size() == 24);
  CHECK(r.output[10] == 'T');
  CHECK(r.output.back() == 'Z');

  const current_time empty_clock{current_time::clock_fn{}};  // falls back to system_clock
  CHECK(empty_clock.invoke({}).exit_code == 0);

  CHECK(tool.name() == "current_time");
  CHECK_FALSE(tool.description().empty());
  const auto schema = tool.parameters_schema();
  CHECK(schema.at("type") == "object");
  CHECK(schema.at("properties").at("utc_offset").at("type") == "string");
  CHECK_FALSE(schema.contains("required"));
}
