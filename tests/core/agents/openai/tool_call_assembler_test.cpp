#include "core/agents/openai/tool_call_assembler.hpp"

#include <doctest/doctest.h>

#include <vector>

using agw::core::openai::assembled_call;
using agw::core::openai::tool_call_assembler;
using agw::core::openai::tool_call_fragment;

namespace {

std::vector<assembled_call> assemble(const std::vector<tool_call_fragment>& fragments) {
  tool_call_assembler a;
  for (const auto& f : fragments) a.add(f);
  return a.finish();
}

}  // namespace

TEST_CASE("tool_call_assembler: parallel calls by index, everything split, interleaved") {
  auto calls = assemble({{0, "call_", "calc", ""},
                         {1, "call_b", "current", ""},
                         {0, "a", "ulator", "{\"expr"},
                         {1, "", "_time", "{}"},
                         {0, "", "", "ession\":\"2+3\"}"}});
  REQUIRE(calls.size() == 2);
  CHECK(calls[0] == assembled_call{"call_a", "calculator", R"({"expression":"2+3"})"});
  CHECK(calls[1] == assembled_call{"call_b", "current_time", "{}"});
}

TEST_CASE("tool_call_assembler: a whole call in one fragment") {
  CHECK(assemble({{0, "c1", "calculator", R"({"expression":"1"})"}}) ==
        std::vector<assembled_call>{{"c1", "calculator", R"({"expression":"1"})"}});
}

TEST_CASE("tool_call_assembler: index 0 repeated with new ids (Ollama) makes separate calls") {
  auto calls = assemble({{0, "call_1", "calculator", R"({"expression":"1+1"})"},
                         {0, "call_2", "current_time", "{}"},
                         {0, "call_3", "calculator", R"({"expression":"2"})"}});
  REQUIRE(calls.size() == 3);
  CHECK(calls[1] == assembled_call{"call_2", "current_time", "{}"});
  CHECK(calls[2].arguments == R"({"expression":"2"})");
}

TEST_CASE("tool_call_assembler: the same id and name repeated in every fragment are not doubled") {
  auto calls = assemble({{0, "c1", "calc", "{\"a\""}, {0, "c1", "calc", ":1}"}});
  REQUIRE(calls.size() == 1);
  CHECK(calls[0] == assembled_call{"c1", "calc", R"({"a":1})"});
  // The name again without the id (some servers), and without an index.
  auto named = assemble({{std::nullopt, "", "calc", "{\"a\""}, {std::nullopt, "", "calc", ":1}"}});
  REQUIRE(named.size() == 1);
  CHECK(named[0] == assembled_call{"call_1", "calc", R"({"a":1})"});
}

TEST_CASE("tool_call_assembler: a missing index goes by id, then to the latest call; missing ids are made up") {
  auto calls = assemble({{std::nullopt, "", "calculator", "{\"exp"},
                         {std::nullopt, "", "", "ression\":\"1\"}"},
                         {std::nullopt, "", "current_time", ""},
                         {std::nullopt, "", "", "{}"}});
  REQUIRE(calls.size() == 2);
  CHECK(calls[0] == assembled_call{"call_1", "calculator", R"({"expression":"1"})"});
  CHECK(calls[1] == assembled_call{"call_2", "current_time", "{}"});

  auto by_id = assemble({{std::nullopt, "a", "f", "["}, {std::nullopt, "b", "g", "{"}, {std::nullopt, "a", "", "]"}});
  REQUIRE(by_id.size() == 2);
  CHECK(by_id[0].arguments == "[]");
  CHECK(by_id[1].arguments == "{");
}

TEST_CASE("tool_call_assembler: no fragments, no calls") {
  tool_call_assembler a;
  a.add({});
  CHECK(a.empty());
  CHECK(a.finish().empty());
}
