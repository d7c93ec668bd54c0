#pragma once
// Joins streamed tool-call fragments into whole calls. Fragments go to a call
// by `index`; a fragment that repeats an index with a new id after that call's
// arguments are whole JSON starts a new call (Ollama sends every call as index
// 0). A fragment without an index goes to the call with its id, else to a new
// call (another id, or a name after whole arguments), else to the latest call.
// Missing ids are made up ("call_<n>").
// Whether the model called tools is decided here, never from finish_reason.
// Not thread-safe: one per model response, on the run's strand.
#include <string>
#include <vector>

#include "core/agents/openai/chat_chunk.hpp"

namespace agw::core::openai {

struct assembled_call {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text as the model wrote it
  bool operator==(const assembled_call&) const = default;
};

class tool_call_assembler {
 public:
  void add(const tool_call_fragment& f);
  bool empty() const { return calls_.empty(); }
  // The calls in the order they started, every one with an id.
  std::vector<assembled_call> finish() const;

 private:
  struct slot {
    std::int64_t index;
    assembled_call call;
  };
  slot* find_index(std::int64_t index);
  slot* find_id(const std::string& id);
  slot& start(std::int64_t index);
  slot* target_for(const tool_call_fragment& f);

  std::vector<slot> calls_;
};

}  // namespace agw::core::openai
