#include "core/agents/mock_agent.hpp"

#include <doctest/doctest.h>

#include <cctype>
#include <string>
#include <vector>

namespace {

using agw::core::mock_tokens;
using tokens = std::vector<std::string>;

}  // namespace

TEST_CASE("mock_agent: mock_tokens echoes the words, each but the first with one leading space") {
  struct row {
    std::string content;
    tokens expected;
  };
  const row rows[] = {
      {"", {}},
      {" ", {}},
      {" \t\n\r\v\f ", {}},
      {"hello", {"hello"}},
      {"hello world", {"hello", " world"}},
      {"  hello   world  ", {"hello", " world"}},
      {"a\tb\nc\r\nd", {"a", " b", " c", " d"}},
      {"one two three four", {"one", " two", " three", " four"}},
      {"2+2=4?", {"2+2=4?"}},
      {"h\xC3\xA9llo w\xC3\xB6rld \xF0\x9F\x98\x80", {"h\xC3\xA9llo", " w\xC3\xB6rld", " \xF0\x9F\x98\x80"}},
  };
  for (const auto& r : rows) {
    CAPTURE(r.content);
    CHECK(mock_tokens(r.content, std::nullopt) == r.expected);
  }
}

TEST_CASE("mock_agent: mock_tokens splits at exactly the bytes std::isspace calls space") {
  for (int c = 0; c < 256; ++c) {
    CAPTURE(c);
    const std::string content = std::string("a") + static_cast<char>(c) + "b";
    CHECK(mock_tokens(content, std::nullopt).size() == (std::isspace(c) ? 2u : 1u));
  }
}

TEST_CASE("mock_agent: mock_tokens with a count ignores the content") {
  CHECK(mock_tokens("anything at all", 0).empty());
  CHECK(mock_tokens("", 1) == tokens{"tok0"});
  CHECK(mock_tokens("x y", 3) == tokens{"tok0", " tok1", " tok2"});
  const auto many = mock_tokens("", 1000);
  REQUIRE(many.size() == 1000);
  CHECK(many.front() == "tok0");
  CHECK(many.back() == " tok999");
  // Concatenated, the tokens are the words joined by single spaces.
  std::string joined;
  for (const auto& t : mock_tokens("  the  quick\nbrown fox ", std::nullopt)) joined += t;
  CHECK(joined == "the quick brown fox");
}
