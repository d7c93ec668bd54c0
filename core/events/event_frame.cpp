#include "core/events/event_frame.hpp"

namespace agw::core {

frame_batch make_frame_batch(std::vector<frame_ptr> frames) {
  auto group = std::make_shared<frame_group>();
  std::size_t bytes = 0;
  for (const auto& f : frames) bytes += f->sse.size();
  group->joined.reserve(bytes);
  for (const auto& f : frames) group->joined += f->sse;
  group->frames = std::move(frames);
  return group;
}

}  // namespace agw::core
