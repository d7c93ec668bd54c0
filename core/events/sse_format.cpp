#include "core/events/sse_format.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>

namespace agw::core {

event_frame make_event_frame(std::int64_t id, std::string_view type, std::string_view run_id, boost::json::object data) {
  event_frame f;
  f.id = id;
  f.type = std::string(type);
  f.run_id = std::string(run_id);
  // run_id leads the object so a reader sees which run an event belongs to first. It
  // is spliced in as text (run ids are UUIDs, nothing to escape) rather than copying
  // the object: this runs once per event.
  const std::string body = boost::json::serialize(data);
  f.data.reserve(body.size() + run_id.size() + 14);
  f.data += "{\"run_id\":";
  f.data += boost::json::serialize(boost::json::string_view(run_id.data(), run_id.size()));
  if (body.size() > 2) {
    f.data += ',';
    f.data.append(body, 1, std::string::npos);
  } else {
    f.data += '}';
  }
  f.text.reserve(f.data.size() + type.size() + 40);
  f.text += "id: ";
  f.text += std::to_string(id);
  f.text += "\nevent: ";
  f.text += type;
  f.text += "\ndata: ";
  f.text += f.data;
  f.text += "\n\n";
  return f;
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

event_frame parse_stored_frame(std::string text) {
  event_frame f;
  std::string_view rest = text;
  while (!rest.empty()) {
    auto nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    if (line.starts_with("id: ")) {
      std::from_chars(line.data() + 4, line.data() + line.size(), f.id);
    } else if (line.starts_with("event: ")) {
      f.type = std::string(line.substr(7));
    } else if (line.starts_with("data: ")) {
      f.data = std::string(line.substr(6));
    }
  }
  boost::system::error_code ec;
  auto v = boost::json::parse(f.data, ec);
  if (!ec && v.is_object())
    if (auto* r = v.get_object().if_contains("run_id"); r && r->is_string()) f.run_id = std::string(r->get_string());
  f.text = std::move(text);
  return f;
}

}  // namespace agw::core
