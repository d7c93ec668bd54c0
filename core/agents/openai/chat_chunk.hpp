#pragma once
// One `data:` payload of an OpenAI-compatible chat-completions stream, decoded
// into what the run needs: text, reasoning, tool-call fragments, the finish
// reason, usage, an in-stream error, or the [DONE] sentinel. A pure function:
// the same payload always gives the same chunk. Thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agw::core::openai {

// A piece of one tool call as the upstream streams it: any field may be absent,
// and id, name and arguments may be cut anywhere (tool_call_assembler joins them).
struct tool_call_fragment {
  std::optional<std::int64_t> index;
  std::string id;
  std::string name;
  std::string arguments;
  bool operator==(const tool_call_fragment&) const = default;
};

struct usage_counts {
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  bool operator==(const usage_counts&) const = default;
};

struct upstream_error {
  std::string code;  // the upstream's code or type, as text ("" when none)
  std::string message;
  bool operator==(const upstream_error&) const = default;
};

struct chat_chunk {
  bool done = false;       // the [DONE] sentinel
  bool malformed = false;  // not JSON, or not an object: the stream is broken
  std::string content;     // choices[0].delta.content
  std::string reasoning;   // delta.reasoning_content (DeepSeek, older vLLM) or delta.reasoning (newer vLLM, Ollama)
  std::vector<tool_call_fragment> tool_calls;
  std::string finish_reason;  // "" while the choice goes on
  std::optional<usage_counts> usage;
  std::optional<upstream_error> error;  // {"error": {...}} inside a 200 stream (vLLM, llama.cpp)
  bool operator==(const chat_chunk&) const = default;
};

chat_chunk decode_chat_chunk(std::string_view data);

}  // namespace agw::core::openai
