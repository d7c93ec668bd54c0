// Parsing configured API keys: "key" or "key:tenant", lists and keys files.
#include <doctest/doctest.h>

#include <stdexcept>

#include "core/api_key_entry.hpp"

using namespace agw::core;

TEST_CASE("api key entries: keys, tenants, and the refusals") {
  auto keys = parse_api_key_list(" key-one-0123456789 , key-two-0123456789:acme");
  REQUIRE(keys.size() == 2);
  CHECK(keys[0].key == "key-one-0123456789");
  CHECK_FALSE(keys[0].tenant.has_value());
  CHECK(keys[1].tenant == "acme");
  CHECK(parse_api_key_list("").empty());
  for (const char* bad : {"short", "key-one-0123456789,", "key-one-0123456789:", "key one 0123456789x", ",key-one-0123456789"})
    CHECK_THROWS_AS(parse_api_key_list(bad), std::invalid_argument);
}

TEST_CASE("api keys file: one entry a line, comments and blank lines skipped, a bad line named") {
  auto keys = parse_api_keys_file("# keys\n\nkey-one-0123456789\r\n  key-two-0123456789:t1  \n");
  REQUIRE(keys.size() == 2);
  CHECK(keys[1].tenant == "t1");
  try {
    parse_api_keys_file("key-one-0123456789\nnope\n");
    FAIL("a bad line was accepted");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).starts_with("line 2:"));
  }
}
