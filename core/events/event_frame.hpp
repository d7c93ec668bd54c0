#pragma once
// One event of a session's sequence, serialized once into its SSE frame and
// then shared, immutable, by the ring buffer, the log batch and every subscriber.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace agw::core {

struct event_frame {
  std::int64_t id = 0;
  std::string type;    // status, token, tool_call, ..., done
  std::string run_id;
  std::string data;    // the JSON object, one line
  std::string text;    // "id: N\nevent: T\ndata: {...}\n\n"
};

using frame_ptr = std::shared_ptr<const event_frame>;
// Frames released together by one commit, in id order.
using frame_batch = std::shared_ptr<const std::vector<frame_ptr>>;

}  // namespace agw::core
