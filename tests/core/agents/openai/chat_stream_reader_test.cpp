#include "core/agents/openai/chat_stream_reader.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/agents/openai/tool_call_assembler.hpp"
#include "tests/core/agents/openai/recorded_streams.hpp"

using agw::core::openai::chat_chunk;
using agw::core::openai::chat_stream_reader;
using agw::core::openai::tool_call_assembler;

namespace {

std::vector<chat_chunk> read_in_pieces(const std::string& body, const std::vector<std::size_t>& cuts) {
  chat_stream_reader reader;
  std::vector<chat_chunk> out;
  std::size_t from = 0;
  for (auto cut : cuts) {
    REQUIRE(reader.feed(std::string_view(body).substr(from, cut - from), out));
    from = cut;
  }
  REQUIRE(reader.feed(std::string_view(body).substr(from), out));
  reader.finish(out);
  return out;
}

}  // namespace

TEST_CASE("chat_stream_reader: the recorded streams decode as expected") {
  const auto streams = agw::tests::recorded_streams();
  auto hosted = read_in_pieces(streams[0], {});
  REQUIRE(hosted.size() == 9);
  CHECK(hosted[1].content == "Let me \xc3\xa9 check");
  tool_call_assembler calls;
  for (const auto& c : hosted)
    for (const auto& f : c.tool_calls) calls.add(f);
  REQUIRE(calls.finish().size() == 2);
  CHECK(calls.finish()[0].arguments == R"({"expression":"2+3"})");
  CHECK(hosted[7].usage->completion_tokens == 9);
  CHECK(hosted[8].done);

  auto vllm = read_in_pieces(streams[1], {});
  REQUIRE(vllm.size() == 4);
  CHECK(vllm[0].reasoning == "think");
  CHECK(vllm[1].reasoning == "ing");
  CHECK(vllm[3].error->message == "out of memory");

  chat_stream_reader ollama;
  std::vector<chat_chunk> out;
  ollama.feed(streams[2], out);
  ollama.finish(out);
  CHECK_FALSE(ollama.saw_done());
  CHECK(ollama.complete());  // a finish_reason without [DONE] is complete

  auto llama = read_in_pieces(streams[3], {});
  REQUIRE(llama.size() == 4);
  CHECK(llama[2].content == "ok");
  CHECK_FALSE(llama[2].malformed);
}

TEST_CASE("chat_stream_reader: nothing after [DONE] counts; a body cut short is not complete") {
  chat_stream_reader r;
  std::vector<chat_chunk> out;
  r.feed(
      "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\ndata: "
      "{\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n",
      out);
  CHECK(out.size() == 2);
  chat_stream_reader cut;
  std::vector<chat_chunk> partial;
  cut.feed("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", partial);
  cut.finish(partial);
  CHECK_FALSE(cut.complete());
}

TEST_CASE("chat_stream_reader fuzz: thousands of random splits give the same chunks as the whole stream") {
  std::mt19937 rng(20261124);
  const auto streams = agw::tests::recorded_streams();
  int runs = 0;
  for (const auto& body : streams) {
    const auto whole = read_in_pieces(body, {});
    REQUIRE_FALSE(whole.empty());
    for (int trial = 0; trial < 1500; ++trial) {
      // 1 to 40 cuts anywhere, bytes of a UTF-8 sequence and CR/LF pairs included.
      std::uniform_int_distribution<std::size_t> count(1, 40), at(0, body.size());
      std::vector<std::size_t> cuts(count(rng));
      for (auto& c : cuts) c = at(rng);
      std::sort(cuts.begin(), cuts.end());
      const auto split = read_in_pieces(body, cuts);
      if (split != whole) FAIL_CHECK("stream " << &body - &streams[0] << " differs when split");
      ++runs;
    }
  }
  CHECK(runs == 6000);
}
