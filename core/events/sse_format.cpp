#include "core/events/sse_format.hpp"

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <boost/json/serializer.hpp>
#include <cassert>
#include <charconv>
#include <cstring>

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

// Whether JSON escapes anything in `s` (control characters, quote, backslash).
bool needs_escaping(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == '"' || c == '\\'; });
}

void append_json_string(std::string& out, std::string_view s) {
  // Most tokens hold nothing JSON escapes: then the serializer's output is the text in
  // quotes, written here directly.
  if (!needs_escaping(s)) {
    out += '"';
    out += s;
    out += '"';
    return;
  }
  auto& sr = thread_serializer();
  sr.reset(boost::json::string_view(s.data(), s.size()));
  drain(sr, out);
}

// A run frame's layout, spelled once for the builders below (the reconnected frame and
// other data without a run id use only its SSE lines):
//   id: N\nevent: T\ndata: {"run_id":"R","source":"S",...}\n\n
// (no id line for an unnumbered frame). Run ids are UUIDs and source names fixed ASCII
// words: nothing in them to escape, so they are written as they are.
constexpr std::string_view id_lead = "id: ";
constexpr std::string_view id_end = "\n";
constexpr std::string_view event_lead = "event: ";
constexpr std::string_view data_lead = "\ndata: ";
constexpr std::string_view run_lead = "{\"run_id\":\"";
constexpr std::string_view source_lead = "\",\"source\":\"";
constexpr std::string_view source_end = "\"";
constexpr std::string_view frame_end = "\n\n";

// "id: N\nevent: T\ndata: " (no id line for an unnumbered frame); returns where data starts.
std::uint32_t begin_data(std::string& out, std::int64_t id, event_type type) {
  if (id >= 0) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, id).ptr;
    out += id_lead;
    out.append(digits, end);
    out += id_end;
  }
  out += event_lead;
  out += name_of(type);
  out += data_lead;
  return static_cast<std::uint32_t>(out.size());
}

// begin_data, then the object's first members: the run id and the source. The others
// and the end follow.
event_frame::layout begin_frame(std::string& out, std::int64_t id, event_type type, std::string_view run_id,
                                std::string_view source) {
  event_frame::layout at{};
  at.data_at = begin_data(out, id, type);
  // run_id leads the object so a reader sees which run an event belongs to first.
  out += run_lead;
  at.run_at = static_cast<std::uint32_t>(out.size());
  at.run_len = static_cast<std::uint32_t>(run_id.size());
  out += run_id;
  out += source_lead;
  out += source;
  out += source_end;
  return at;
}

// Writes a frame's pieces into a string sized for all of them first: one allocation,
// and no capacity check or growth per piece (a token's frame is a dozen pieces, and
// tokens are most of the events).
class piece_writer {
 public:
  piece_writer(std::string& out, std::size_t size) : out_(out) {
    out_.resize(size);
    at_ = out_.data();
  }
  void put(std::string_view s) {
    if (s.empty()) return;  // an empty view's data() may be null: not for memcpy
    std::memcpy(at_, s.data(), s.size());
    at_ += s.size();
  }
  std::uint32_t offset() const { return static_cast<std::uint32_t>(at_ - out_.data()); }
  bool full() const { return at_ == out_.data() + out_.size(); }

 private:
  std::string& out_;
  char* at_;
};

// Ends the frame begun by begin_frame and takes it.
event_frame end_frame(std::int64_t id, event_type type, std::string text, event_frame::layout at) {
  at.data_len = static_cast<std::uint32_t>(text.size()) - at.data_at;
  text += frame_end;
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
  if (!needs_escaping(key) && !needs_escaping(value)) {
    // The usual case (a token, a status): the same bytes as below, each piece copied
    // once into a string of the frame's exact size.
    char digits[24];
    const std::string_view number(digits,
                                  static_cast<std::size_t>(std::to_chars(digits, digits + sizeof digits, id).ptr - digits));
    const std::string_view type_name = name_of(type), source_name = name_of(source);
    // The object's last member: ,"key":"value"} after the source.
    constexpr std::string_view key_lead = ",\"", value_lead = "\":\"", data_end = "\"}";
    const bool numbered = id >= 0;
    const std::size_t size = (numbered ? id_lead.size() + number.size() + id_end.size() : 0) + event_lead.size() +
                             type_name.size() + data_lead.size() + run_lead.size() + run_id.size() + source_lead.size() +
                             source_name.size() + source_end.size() + key_lead.size() + key.size() + value_lead.size() +
                             value.size() + data_end.size() + frame_end.size();
    std::string text;
    piece_writer out(text, size);
    if (numbered) {
      out.put(id_lead);
      out.put(number);
      out.put(id_end);
    }
    out.put(event_lead);
    out.put(type_name);
    out.put(data_lead);
    event_frame::layout at{};
    at.data_at = out.offset();
    out.put(run_lead);
    at.run_at = out.offset();
    at.run_len = static_cast<std::uint32_t>(run_id.size());
    out.put(run_id);
    out.put(source_lead);
    out.put(source_name);
    out.put(source_end);
    out.put(key_lead);
    out.put(key);
    out.put(value_lead);
    out.put(value);
    out.put(data_end);
    at.data_len = out.offset() - at.data_at;
    out.put(frame_end);
    assert(out.full());
    return event_frame(id, type, std::move(text), at);
  }
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

namespace {

// The rest of the lead once the run id is known: `from_run_quote` starts at the run
// id's closing quote. Inlined into both splits: the journal splits every event, and the
// call was a third of the split's cost.
[[gnu::always_inline]] inline std::optional<run_lead_split> split_after_run(std::string_view run,
                                                                            std::string_view from_run_quote) {
  if (!from_run_quote.starts_with(source_end)) return std::nullopt;
  // Data from before sources names none: the members follow the run id's quote.
  run_lead_split split{.run = run, .source = std::nullopt, .rest = from_run_quote.substr(source_end.size())};
  if (!from_run_quote.starts_with(source_lead)) return split;
  const auto named = from_run_quote.substr(source_lead.size());
  const auto source_close = named.find('"');  // source names are plain words: no escaped quote
  if (source_close == std::string_view::npos) return std::nullopt;
  split.source = named.substr(0, source_close);
  split.rest = named.substr(source_close + source_end.size());
  return split;
}

}  // namespace

std::optional<run_lead_split> split_run_lead(std::string_view data) {
  if (!data.starts_with(run_lead)) return std::nullopt;
  const auto after_lead = data.substr(run_lead.size());
  const auto run_close = after_lead.find('"');  // run ids are UUIDs: no escaped quote
  if (run_close == std::string_view::npos) return std::nullopt;
  return split_after_run(after_lead.substr(0, run_close), after_lead.substr(run_close));
}

std::optional<run_lead_split> split_run_lead(const event_frame& frame) {
  const std::string_view data = frame.data(), run = frame.run_id();
  // Only this file builds frames, and a frame with a run id has it right after the lead
  // (begin_frame): the layout is trusted, the pointers compared (never subtracted).
  if (run.empty() || run.data() != data.data() + run_lead.size()) return split_run_lead(data);
  return split_after_run(run, data.substr(run_lead.size() + run.size()));
}

std::string_view members_after_run_lead(const event_frame& frame) {
  const auto split = split_run_lead(frame);
  if (!split || split->run != frame.run_id() || !split->source) return {};
  return split->rest;
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
