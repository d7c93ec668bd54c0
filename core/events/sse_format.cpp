#include "core/events/sse_format.hpp"

#include <algorithm>
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

// One serializer per thread, reset for each value: constructing one costs more than
// escaping a token.
boost::json::serializer& thread_serializer() {
  thread_local boost::json::serializer sr;
  return sr;
}

void append_json_string(std::string& out, std::string_view s) {
  // Most tokens hold nothing JSON escapes (control characters, quote, backslash): then
  // the serializer's output is the text in quotes, written here directly.
  if (std::none_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == '"' || c == '\\'; })) {
    out += '"';
    out += s;
    out += '"';
    return;
  }
  auto& sr = thread_serializer();
  sr.reset(boost::json::string_view(s.data(), s.size()));
  drain(sr, out);
}

// "id: N\nevent: T\ndata: {"run_id":"R"" — the members and the end follow. Run ids are
// UUIDs (nothing to escape): written as they are.
// "id: N\nevent: T\ndata: " (no id line for an unnumbered frame); returns where data starts.
std::uint32_t begin_data(std::string& out, std::int64_t id, event_type type) {
  if (id >= 0) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, id).ptr;
    out += "id: ";
    out.append(digits, end);
    out += '\n';
  }
  out += "event: ";
  out += name_of(type);
  out += "\ndata: ";
  return static_cast<std::uint32_t>(out.size());
}

event_frame::layout begin_frame(std::string& out, std::int64_t id, event_type type, std::string_view run_id,
                                std::string_view source) {
  event_frame::layout at{};
  at.data_at = begin_data(out, id, type);
  // run_id leads the object so a reader sees which run an event belongs to first.
  out += "{\"run_id\":\"";
  at.run_at = static_cast<std::uint32_t>(out.size());
  at.run_len = static_cast<std::uint32_t>(run_id.size());
  out += run_id;
  // Source names are fixed ASCII words: nothing to escape.
  out += "\",\"source\":\"";
  out += source;
  out += '"';
  return at;
}

// Ends the frame begun by begin_frame and takes it.
event_frame end_frame(std::int64_t id, event_type type, std::string text, event_frame::layout at) {
  at.data_len = static_cast<std::uint32_t>(text.size()) - at.data_at;
  text += "\n\n";
  return event_frame(id, type, std::move(text), at);
}

}  // namespace

event_frame make_event_frame(std::int64_t id, event_type type, std::string_view run_id, const boost::json::object& data,
                             event_source source) {
  std::string text;
  text.reserve(112 + run_id.size());
  const auto at = begin_frame(text, id, type, run_id, name_of(source));
  if (data.empty()) {
    text += '}';
  } else {
    // The object's own serialization minus its '{', after the run id.
    text += ',';
    auto& sr = thread_serializer();
    sr.reset(&data);
    drain(sr, text, /*skip_first_char=*/true);
  }
  return end_frame(id, type, std::move(text), at);
}

event_frame make_event_frame(std::int64_t id, event_type type, std::string_view run_id, std::string_view key,
                             std::string_view value, event_source source) {
  std::string text;
  text.reserve(80 + run_id.size() + key.size() + value.size());
  const auto at = begin_frame(text, id, type, run_id, name_of(source));
  text += ',';
  append_json_string(text, key);
  text += ':';
  append_json_string(text, value);
  text += '}';
  return end_frame(id, type, std::move(text), at);
}

event_frame make_event_frame_after_run(std::int64_t id, event_type type, std::string_view run_id, std::string_view source,
                                       std::string_view rest) {
  std::string text;
  text.reserve(64 + run_id.size() + rest.size());
  const auto at = begin_frame(text, id, type, run_id, source);
  text += rest;
  return end_frame(id, type, std::move(text), at);
}

event_frame make_event_frame_with_data(std::int64_t id, event_type type, std::string_view data) {
  std::string text;
  text.reserve(40 + data.size());
  event_frame::layout at{};
  at.data_at = begin_data(text, id, type);
  text += data;
  return end_frame(id, type, std::move(text), at);
}

std::size_t run_lead_size(std::string_view run_id, std::string_view source) {
  return std::string_view("{\"run_id\":\"\",\"source\":\"\"").size() + run_id.size() + source.size();
}

std::string retry_line(std::chrono::milliseconds interval) { return "retry: " + std::to_string(interval.count()) + "\n"; }

std::string_view heartbeat_line() { return ": heartbeat\n"; }

std::string reconnected_frame(std::int64_t last_event_id, std::int64_t replayed, bool gap, std::int64_t oldest_event_id) {
  return make_reconnected_frame(last_event_id, replayed, gap, oldest_event_id).sse;
}

event_frame make_reconnected_frame(std::int64_t last_event_id, std::int64_t replayed, bool gap, std::int64_t oldest_event_id) {
  boost::json::object data{
      {"last_event_id", last_event_id}, {"replayed", replayed}, {"gap", gap}, {"oldest_event_id", oldest_event_id}};
  return make_event_frame_with_data(-1, event_type::reconnected, boost::json::serialize(data));
}

}  // namespace agw::core
