#include "core/agents/openai/chat_chunk.hpp"

#include <doctest/doctest.h>

using agw::core::openai::decode_chat_chunk;
using agw::core::openai::tool_call_fragment;
using agw::core::openai::upstream_error;
using agw::core::openai::usage_counts;

TEST_CASE("decode_chat_chunk: content, reasoning in both spellings, finish reason") {
  auto c = decode_chat_chunk(R"({"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]})");
  CHECK(c.content == "Hel");
  CHECK(c.finish_reason.empty());
  CHECK_FALSE(c.malformed);

  CHECK(decode_chat_chunk(R"({"choices":[{"delta":{"reasoning_content":"hmm"}}]})").reasoning == "hmm");
  CHECK(decode_chat_chunk(R"({"choices":[{"delta":{"reasoning":"so"}}]})").reasoning == "so");
  CHECK(decode_chat_chunk(R"({"choices":[{"delta":{"content":null},"finish_reason":"stop"}]})").finish_reason == "stop");
}

TEST_CASE("decode_chat_chunk: the usage chunk with empty choices, and [DONE]") {
  auto u = decode_chat_chunk(R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}})");
  REQUIRE(u.usage);
  CHECK(*u.usage == usage_counts{12, 34});
  CHECK(u.content.empty());
  CHECK(decode_chat_chunk("[DONE]").done);
  CHECK_FALSE(decode_chat_chunk(R"({"choices":[]})").usage);
}

TEST_CASE("decode_chat_chunk: an error object inside a 200 stream") {
  auto e = decode_chat_chunk(R"({"error":{"message":"context too long","type":"invalid_request_error","code":400}})");
  REQUIRE(e.error);
  CHECK(*e.error == upstream_error{"400", "context too long"});
  auto s = decode_chat_chunk(R"({"error":{"message":"overloaded","type":"server_error"}})");
  REQUIRE(s.error);
  CHECK(s.error->code == "server_error");
  CHECK(decode_chat_chunk(R"({"error":"plain text"})").error->message == "plain text");
}

TEST_CASE("decode_chat_chunk: tool-call fragments keep what is there and nothing else") {
  auto c = decode_chat_chunk(
      R"({"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_x","type":"function","function":{"name":"calc","arguments":"{\"a"}},{"function":{"arguments":"1}"}}]}}]})");
  REQUIRE(c.tool_calls.size() == 2);
  CHECK(c.tool_calls[0] == tool_call_fragment{1, "call_x", "calc", "{\"a"});
  CHECK(c.tool_calls[1] == tool_call_fragment{std::nullopt, "", "", "1}"});
  // Arguments sent as an object rather than its text.
  auto o = decode_chat_chunk(R"({"choices":[{"delta":{"tool_calls":[{"function":{"name":"f","arguments":{"x":1}}}]}}]})");
  CHECK(o.tool_calls.at(0).arguments == R"({"x":1})");
}

TEST_CASE("decode_chat_chunk: what is not a JSON object is malformed") {
  CHECK(decode_chat_chunk("{not json").malformed);
  CHECK(decode_chat_chunk("[1,2]").malformed);
  CHECK(decode_chat_chunk("").malformed);
}
