#pragma once
// One event of a session's sequence as data: its id, its type, its run and its
// data object; plus its SSE encoding (the contract's wire form), made once when
// the event is built and then shared, immutable, by the ring buffer, the log
// batch and every subscriber. Other encodings (the durable log's log_codec,
// further wire protocols) are made from the record, never by parsing the SSE
// text. The run id and data are views into the encoding: one allocation per
// event besides the shared_ptr's.
//
// Built by the functions in sse_format.hpp (the only place that knows the SSE
// layout); thread-safe once built (immutable).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/events/event_type.hpp"

namespace agw::core {

struct event_frame {
  // Where the run id and data are in `sse`, as its builder wrote them.
  struct layout {
    std::uint32_t data_at, data_len, run_at, run_len;
  };
  event_frame(std::int64_t frame_id, event_type kind, std::string encoded, const layout& at)
      : id(frame_id), type(kind), sse(std::move(encoded)), at_(at) {}

  std::int64_t id = 0;  // -1: an unnumbered frame (reconnected), never skipped
  event_type type;
  std::string sse;  // the SSE encoding: "id: N\nevent: T\ndata: {...}\n\n"

  std::string_view type_name() const { return name_of(type); }
  std::string_view data() const { return view(at_.data_at, at_.data_len); }  // the JSON object, one line
  std::string_view run_id() const { return view(at_.run_at, at_.run_len); }  // empty when the event has none

 private:
  std::string_view view(std::uint32_t at, std::uint32_t len) const { return std::string_view(sse).substr(at, len); }
  layout at_;
};

using frame_ptr = std::shared_ptr<const event_frame>;

// Frames handed to subscribers together (one commit's, or a page of a replay), in
// id order, with their SSE encodings end to end: joined once, so every stream that
// writes the whole batch (the usual case) sends one buffer, however many subscribers.
struct frame_group {
  std::vector<frame_ptr> frames;
  std::string joined;

  std::size_t size() const { return frames.size(); }
};
using frame_batch = std::shared_ptr<const frame_group>;

frame_batch make_frame_batch(std::vector<frame_ptr> frames);

}  // namespace agw::core
