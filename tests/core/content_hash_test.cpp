#include "core/content_hash.hpp"

#include <doctest/doctest.h>

#include <string>

TEST_CASE("content_hash: SHA-256 hex of known inputs") {
  struct row {
    std::string text;
    const char* hex;
  };
  const row rows[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {std::string(1000000, 'a'), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text.size());
    CHECK(agw::core::content_hash(r.text) == r.hex);
  }
  // Embedded NUL bytes are part of the content.
  CHECK(agw::core::content_hash(std::string("a\0b", 3)) != agw::core::content_hash("a"));
  CHECK(agw::core::content_hash("abc").size() == 64);
}
