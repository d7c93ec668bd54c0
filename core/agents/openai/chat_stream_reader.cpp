#include "core/agents/openai/chat_stream_reader.hpp"

namespace agw::core::openai {

bool chat_stream_reader::feed(std::string_view bytes, std::vector<chat_chunk>& out) {
  const bool ok = sse_.feed(bytes, messages_);
  decode(out);
  return ok;
}

void chat_stream_reader::finish(std::vector<chat_chunk>& out) {
  sse_.finish(messages_);
  decode(out);
}

void chat_stream_reader::decode(std::vector<chat_chunk>& out) {
  for (auto& m : messages_) {
    // Nothing after [DONE] counts.
    if (saw_done_) break;
    auto chunk = decode_chat_chunk(m.data);
    saw_done_ = chunk.done;
    if (!chunk.finish_reason.empty()) saw_finish_ = true;
    out.push_back(std::move(chunk));
  }
  messages_.clear();
}

}  // namespace agw::core::openai
