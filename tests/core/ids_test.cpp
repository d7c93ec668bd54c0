#include "core/ids.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

TEST_CASE("ids: is_uuid") {
  struct row {
    const char* text;
    bool expected;
  };
  const row rows[] = {
      {"123e4567-e89b-12d3-a456-426614174000", true},    {"00000000-0000-0000-0000-000000000000", true},
      {"FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF", true},    {"", false},
      {"123e4567e89b12d3a456426614174000", false},       // no dashes
      {"123e4567-e89b-12d3-a456-42661417400", false},    // 35
      {"123e4567-e89b-12d3-a456-4266141740000", false},  // 37
      {"123e4567-e89b-12d3-a456_426614174000", false},   // wrong separator
      {"123e4567-e89b-12d3-a4560426614174000-", false},  // dash moved
      {"g23e4567-e89b-12d3-a456-426614174000", false},   // not hex
      {"123e4567-e89b-12d3-a456-42661417400 ", false},   {"{123e4567-e89b-12d3-a456-426614174000}", false},
      {"123e4567-e89b-12d3-a456-426614174000\n", false}, {"../../../../etc/passwd/../../../../../", false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    CHECK(agw::core::is_uuid(r.text) == r.expected);
  }
  CHECK_FALSE(agw::core::is_uuid(std::string_view("123e4567-e89b-12d3-a456-42661417400\0", 36)));
}

TEST_CASE("ids: new_uuid is canonical lower-case v7 and unique") {
  std::set<std::string> seen;
  for (int i = 0; i < 2000; ++i) {
    const auto id = agw::core::new_uuid();
    CAPTURE(id);
    REQUIRE(agw::core::is_uuid(id));
    CHECK(id[14] == '7');                                          // version 7
    CHECK(std::string("89ab").find(id[19]) != std::string::npos);  // RFC 4122 variant
    CHECK(id.find_first_of("ABCDEF") == std::string::npos);
    seen.insert(id);
  }
  CHECK(seen.size() == 2000);
  // Per-thread generators do not repeat each other.
  std::vector<std::string> a, b;
  std::thread ta([&] {
    for (int i = 0; i < 500; ++i) a.push_back(agw::core::new_uuid());
  });
  std::thread tb([&] {
    for (int i = 0; i < 500; ++i) b.push_back(agw::core::new_uuid());
  });
  ta.join();
  tb.join();
  for (const auto& id : a) seen.insert(id);
  for (const auto& id : b) seen.insert(id);
  CHECK(seen.size() == 3000);
}

TEST_CASE("ids: new_uuid sorts by creation time, its first 48 bits being Unix milliseconds") {
  const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
  const auto first = agw::core::new_uuid();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const auto second = agw::core::new_uuid();
  const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
  CHECK(first < second);  // as text, as an index compares them
  const auto ms = std::stoll(first.substr(0, 8) + first.substr(9, 4), nullptr, 16);
  CHECK(ms >= before.count());
  CHECK(ms <= after.count());
}
