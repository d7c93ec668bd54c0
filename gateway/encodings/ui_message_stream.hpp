#pragma once
// The AI SDK's UI message stream (what `useChat`'s DefaultChatTransport reads, protocol
// "v1"): one `data: <json>` line per chunk, LF only, ended by `data: [DONE]`. Each
// chunk's frame also carries an `id:` line with the session event id it came from
// (the AI SDK ignores it; our own tools can resume by it).
//
// encode_ui_message_chunks is a pure function of the event and the run's state so far:
// which text or reasoning part is open, whether a step is open and the run started.
// A stream starts at its run's first event (POST /chat, GET /chat/stream), so the
// state is the same for every reader of that run.
//
// Our events map to chunks (docs/frontends.md, "AI SDK"):
//   first event of the run  -> start {messageId: run id}, start-step
//   token                   -> text-start (once per part), text-delta
//   reasoning               -> reasoning-start (once per part), reasoning-delta
//   tool_call               -> tool-input-start, tool-input-available
//   tool_result             -> tool-output-available, or tool-output-error (exit_code != 0)
//   content after a tool result opens a new step: finish-step, start-step
//   error                   -> error {errorText}
//   done                    -> (open parts end) finish-step, finish, then data: [DONE]
//   any other event         -> nothing
#include <cstdint>
#include <string>

#include "core/events/event_frame.hpp"
#include "gateway/encodings/frame_encoder.hpp"

namespace agw::gateway {

// One run's state as its UI message stream goes (value type; starts empty).
struct ui_stream_state {
  enum class open_part { none, text, reasoning };
  bool started = false;            // `start` sent
  bool step_open = false;          // `start-step` sent, its `finish-step` not yet
  bool after_tool_result = false;  // the next content belongs to a new step
  open_part open = open_part::none;
  std::int64_t part_event = 0;  // the event that opened the open part: its id names the part
  bool failed = false;          // an `error` was sent: finish says so
  bool aborted = false;         // the run was aborted
  bool finished = false;        // `finish` and [DONE] sent: nothing more is encoded
};

// Appends the chunks `frame` makes to `out` and moves `state` on. Unnumbered frames
// (reconnected) and frames after the finish make nothing.
void encode_ui_message_chunks(ui_stream_state& state, const core::event_frame& frame, std::string& out);

// The frame_encoder a chat stream writes with: the function above over its own state.
class ui_message_encoder final : public frame_encoder {
 public:
  void encode(const core::event_frame& frame, std::string& out) override { encode_ui_message_chunks(state_, frame, out); }

 private:
  ui_stream_state state_;
};

// The response header the AI SDK checks for this protocol.
inline constexpr const char* ui_message_stream_header = "x-vercel-ai-ui-message-stream";
inline constexpr const char* ui_message_stream_version = "v1";

}  // namespace agw::gateway
