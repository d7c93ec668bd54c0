#pragma once
// An upstream chat-completions response body, read as it arrives: bytes in,
// decoded chunks out, in order, whatever the split. Remembers whether the
// stream said it was complete ([DONE], or a finish_reason for servers that
// omit [DONE]), so the end of the body can be judged complete or cut short.
// Not thread-safe: one per response, on the run's strand.
#include <string_view>
#include <vector>

#include "core/agents/openai/chat_chunk.hpp"
#include "core/agents/openai/upstream_sse_parser.hpp"

namespace agw::core::openai {

class chat_stream_reader {
 public:
  // The chunks `bytes` completes; false when the stream is broken (a line too long).
  bool feed(std::string_view bytes, std::vector<chat_chunk>& out);
  // At the end of the body.
  void finish(std::vector<chat_chunk>& out);

  bool saw_done() const { return saw_done_; }
  bool saw_finish_reason() const { return saw_finish_; }
  // Complete: [DONE] arrived, or a finish_reason did (llama.cpp and others may omit [DONE]).
  bool complete() const { return saw_done_ || saw_finish_; }

 private:
  void decode(std::vector<chat_chunk>& out);

  upstream_sse_parser sse_;
  std::vector<sse_message> messages_;
  bool saw_done_ = false;
  bool saw_finish_ = false;
};

}  // namespace agw::core::openai
