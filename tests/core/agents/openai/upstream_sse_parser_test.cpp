#include "core/agents/openai/upstream_sse_parser.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using agw::core::openai::sse_message;
using agw::core::openai::upstream_sse_parser;

namespace {

std::vector<sse_message> parse_whole(const std::string& text, bool finish = false) {
  upstream_sse_parser p;
  std::vector<sse_message> out;
  p.feed(text, out);
  if (finish) p.finish(out);
  return out;
}

std::vector<sse_message> parse_bytewise(const std::string& text) {
  upstream_sse_parser p;
  std::vector<sse_message> out;
  for (char c : text) p.feed(std::string_view(&c, 1), out);
  return out;
}

}  // namespace

TEST_CASE("upstream_sse_parser: the edge cases of the SSE grammar") {
  struct row {
    const char* name;
    std::string input;
    std::vector<sse_message> expected;
  };
  const std::vector<row> table{
      {"LF", "data: a\n\n", {{"", "a"}}},
      {"CRLF", "data: a\r\n\r\n", {{"", "a"}}},
      {"CR", "data: a\r\r", {{"", "a"}}},
      {"mixed line ends", "data: a\r\n\ndata: b\r\rdata: c\n\r\n", {{"", "a"}, {"", "b"}, {"", "c"}}},
      {"comment and keep-alive", ": keep-alive\n\n:ping\ndata: x\n\n", {{"", "x"}}},
      {"no space after colon", "data:x\n\n", {{"", "x"}}},
      {"only the first space is dropped", "data:  x\n\n", {{"", " x"}}},
      {"multi-line data", "data: a\ndata: b\n\n", {{"", "a\nb"}}},
      {"event field", "event: error\ndata: {}\n\n", {{"error", "{}"}}},
      {"id and retry ignored", "id: 4\nretry: 10\ndata: y\n\n", {{"", "y"}}},
      {"blank lines alone dispatch nothing", "\n\n\r\n", {}},
      {"undispatched data waits", "data: a\n", {}},
      {"empty data field", "data\n\n", {{"", ""}}},
  };
  for (const auto& r : table) {
    CAPTURE(r.name);
    CHECK(parse_whole(r.input) == r.expected);
    CHECK(parse_bytewise(r.input) == r.expected);
  }
}

TEST_CASE("upstream_sse_parser: a CR at the end of one piece and an LF at the start of the next are one line end") {
  upstream_sse_parser p;
  std::vector<sse_message> out;
  p.feed("data: a\r", out);
  p.feed("\ndata: b\r", out);
  p.feed("\n\r", out);
  p.feed("\n", out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].data == "a\nb");
}

TEST_CASE("upstream_sse_parser: finish() dispatches data the stream ended without a blank line after") {
  CHECK(parse_whole("data: last", true) == std::vector<sse_message>{{"", "last"}});
  CHECK(parse_whole("data: last\n", true) == std::vector<sse_message>{{"", "last"}});
  CHECK(parse_whole(": only a comment", true).empty());
}

TEST_CASE("upstream_sse_parser: very long lines pass whole; one over the limit fails the stream") {
  const std::string big(1 << 20, 'x');
  auto out = parse_whole("data: " + big + "\n\n");
  REQUIRE(out.size() == 1);
  CHECK(out[0].data == big);

  upstream_sse_parser small(64);
  std::vector<sse_message> got;
  CHECK(small.feed("data: " + std::string(40, 'a'), got));
  CHECK_FALSE(small.feed(std::string(40, 'a'), got));
  CHECK(small.failed());
  CHECK_FALSE(small.feed("\n\n", got));
  CHECK(got.empty());
}
