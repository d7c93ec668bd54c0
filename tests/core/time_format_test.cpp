#include "core/time_format.hpp"

#include <doctest/doctest.h>

#include <chrono>

TEST_CASE("time_format: format_rfc3339_ms") {
  // Only non-negative inputs occur (timestamps are taken from the system clock).
  struct row {
    std::int64_t epoch_ms;
    const char* expected;
  };
  const row rows[] = {
      {0, "1970-01-01T00:00:00.000Z"},
      {1, "1970-01-01T00:00:00.001Z"},
      {999, "1970-01-01T00:00:00.999Z"},
      {1000, "1970-01-01T00:00:01.000Z"},
      {86399999, "1970-01-01T23:59:59.999Z"},
      {86400000, "1970-01-02T00:00:00.000Z"},
      {78796799999, "1972-06-30T23:59:59.999Z"},
      {951782400000, "2000-02-29T00:00:00.000Z"},   // leap day (divisible by 400)
      {1709210096789, "2024-02-29T12:34:56.789Z"},  // leap day
      {1709251199999, "2024-02-29T23:59:59.999Z"},  // last ms of the leap day
      {1709251200000, "2024-03-01T00:00:00.000Z"},
      {4107542400000, "2100-03-01T00:00:00.000Z"},  // 2100 is not a leap year
      {1774096496123, "2026-03-21T12:34:56.123Z"},
      {253402300799999, "9999-12-31T23:59:59.999Z"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.epoch_ms);
    CHECK(agw::core::format_rfc3339_ms(r.epoch_ms) == r.expected);
  }
}

TEST_CASE("time_format: now_ms is the system clock in ms") {
  using namespace std::chrono;
  const auto before = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  const auto now = agw::core::now_ms();
  const auto after = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  CHECK(before <= now);
  CHECK(now <= after);
  CHECK(agw::core::format_rfc3339_ms(now).size() == 24);
}
