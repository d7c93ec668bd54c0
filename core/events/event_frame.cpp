#include "core/events/event_frame.hpp"

#include <charconv>

namespace agw::core {

frame_batch make_frame_batch(std::vector<frame_ptr> frames) {
  auto group = std::make_shared<frame_group>();
  std::size_t bytes = 0;
  for (const auto& f : frames) bytes += f->text.size();
  group->joined.reserve(bytes);
  for (const auto& f : frames) group->joined += f->text;
  group->frames = std::move(frames);
  return group;
}

event_frame::event_frame(std::string frame_text) : text(std::move(frame_text)) {
  std::string_view rest = text;
  auto at = [&](std::string_view part) { return static_cast<std::uint32_t>(part.data() - text.data()); };
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    if (line.starts_with("id: ")) {
      std::from_chars(line.data() + 4, line.data() + line.size(), id);
    } else if (line.starts_with("event: ")) {
      type_at_ = at(line) + 7;
      type_len_ = static_cast<std::uint32_t>(line.size() - 7);
    } else if (line.starts_with("data: ")) {
      data_at_ = at(line) + 6;
      data_len_ = static_cast<std::uint32_t>(line.size() - 6);
    }
  }
  // The run id is written first and is a plain string (a UUID: nothing escaped).
  constexpr std::string_view lead = "{\"run_id\":\"";
  const std::string_view d = data();
  if (d.starts_with(lead)) {
    const auto close = d.find('"', lead.size());
    if (close != std::string_view::npos) {
      run_at_ = data_at_ + static_cast<std::uint32_t>(lead.size());
      run_len_ = static_cast<std::uint32_t>(close - lead.size());
    }
  }
}

}  // namespace agw::core
