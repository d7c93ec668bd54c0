#include "core/events/sse_format.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/serializer.hpp>
#include <charconv>

namespace agw::core {

namespace {

// Appends what `sr` (reset to a value) serializes, without an intermediate string.
void drain(boost::json::serializer& sr, std::string& out, bool skip_first_char = false) {
  char buf[512];
  while (!sr.done()) {
    std::string_view chunk = sr.read(buf);
    if (skip_first_char && !chunk.empty()) {
      chunk.remove_prefix(1);
      skip_first_char = false;
    }
    out.append(chunk);
  }
}

void append_json_string(std::string& out, std::string_view s) {
  boost::json::serializer sr;
  sr.reset(boost::json::string_view(s.data(), s.size()));
  drain(sr, out);
}

// "id: N\nevent: T\ndata: {"run_id":"R"" — the members and the end follow.
void begin_frame(std::string& out, std::int64_t id, std::string_view type, std::string_view run_id) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, id).ptr;
  out += "id: ";
  out.append(digits, end);
  out += "\nevent: ";
  out += type;
  // run_id leads the object so a reader sees which run an event belongs to first.
  out += "\ndata: {\"run_id\":";
  append_json_string(out, run_id);
}

}  // namespace

event_frame make_event_frame(std::int64_t id, std::string_view type, std::string_view run_id, const boost::json::object& data) {
  std::string text;
  text.reserve(96 + run_id.size());
  begin_frame(text, id, type, run_id);
  if (data.empty()) {
    text += '}';
  } else {
    // The object's own serialization minus its '{', after the run id.
    text += ',';
    boost::json::serializer sr;
    sr.reset(&data);
    drain(sr, text, /*skip_first_char=*/true);
  }
  text += "\n\n";
  return event_frame(std::move(text));
}

event_frame make_event_frame(std::int64_t id, std::string_view type, std::string_view run_id, std::string_view key,
                             std::string_view value) {
  std::string text;
  text.reserve(64 + run_id.size() + key.size() + value.size());
  begin_frame(text, id, type, run_id);
  text += ',';
  append_json_string(text, key);
  text += ':';
  append_json_string(text, value);
  text += "}\n\n";
  return event_frame(std::move(text));
}

std::string retry_line(std::chrono::milliseconds interval) { return "retry: " + std::to_string(interval.count()) + "\n"; }

std::string_view heartbeat_line() { return ": heartbeat\n"; }

std::string reconnected_frame(std::int64_t last_event_id, std::int64_t replayed, bool gap, std::int64_t oldest_event_id) {
  boost::json::object data{{"last_event_id", last_event_id}, {"replayed", replayed}, {"gap", gap}, {"oldest_event_id", oldest_event_id}};
  return "event: reconnected\ndata: " + boost::json::serialize(data) + "\n\n";
}

std::vector<stored_event> split_stored_frames(std::string_view frames) {
  std::vector<stored_event> out;
  while (!frames.empty()) {
    auto end = frames.find("\n\n");
    std::string_view frame = frames.substr(0, end == std::string_view::npos ? frames.size() : end + 2);
    frames.remove_prefix(frame.size());
    stored_event e;
    if (frame.starts_with("id: ")) {
      auto digits = frame.substr(4, frame.find('\n') - 4);
      std::from_chars(digits.data(), digits.data() + digits.size(), e.id);
    }
    e.frame = std::string(frame);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace agw::core
