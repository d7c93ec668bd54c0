#pragma once
// One event of a session's sequence, serialized once into its SSE frame and
// then shared, immutable, by the ring buffer, the log batch and every
// subscriber. Only the frame's text is stored: its type, data and run id are
// views into it (one allocation per event besides the shared_ptr's).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace agw::core {

struct event_frame {
  event_frame() = default;
  // Reads id, type, data and run id from an SSE block ("id: N\nevent: T\ndata: D\n\n");
  // fields it lacks are empty (id 0). The run id is the data's leading "run_id" string.
  explicit event_frame(std::string frame_text);
  // Where the parts are in a frame its builder just wrote (nothing to parse again).
  struct layout {
    std::uint32_t type_at, type_len, data_at, data_len, run_at, run_len;
  };
  event_frame(std::int64_t frame_id, std::string frame_text, const layout& at)
      : id(frame_id),
        text(std::move(frame_text)),
        type_at_(at.type_at),
        type_len_(at.type_len),
        data_at_(at.data_at),
        data_len_(at.data_len),
        run_at_(at.run_at),
        run_len_(at.run_len) {}

  std::int64_t id = 0;  // -1: an unnumbered frame (reconnected), never skipped
  std::string text;     // "id: N\nevent: T\ndata: {...}\n\n"

  std::string_view type() const { return view(type_at_, type_len_); }
  std::string_view data() const { return view(data_at_, data_len_); }  // the JSON object, one line
  std::string_view run_id() const { return view(run_at_, run_len_); }

 private:
  std::string_view view(std::uint32_t at, std::uint32_t len) const { return std::string_view(text).substr(at, len); }
  std::uint32_t type_at_ = 0, type_len_ = 0, data_at_ = 0, data_len_ = 0, run_at_ = 0, run_len_ = 0;
};

using frame_ptr = std::shared_ptr<const event_frame>;

// Frames handed to subscribers together (one commit's, or a page of a replay), in
// id order, with their texts end to end: joined once, so every stream that writes
// the whole batch (the usual case) sends one buffer, however many subscribers.
struct frame_group {
  std::vector<frame_ptr> frames;
  std::string joined;

  std::size_t size() const { return frames.size(); }
};
using frame_batch = std::shared_ptr<const frame_group>;

frame_batch make_frame_batch(std::vector<frame_ptr> frames);

}  // namespace agw::core
