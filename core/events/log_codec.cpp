#include "core/events/log_codec.hpp"

#include <charconv>
#include <optional>

#include "core/events/sse_format.hpp"
#include "core/storage/store_error.hpp"

namespace agw::core {

namespace {

// Rows written before events had sources name none: those events were all the agent's.
constexpr std::string_view default_source = "ai_agent";

[[noreturn]] void malformed(const char* why) { throw store_error(std::string("malformed event log row: ") + why); }

event_type type_named(std::string_view name) {
  auto type = event_type_named(name);
  if (!type) malformed("unknown event type");
  return *type;
}

// An event from its type and data object, the run id taken from the data's lead.
frame_ptr event_from_data(std::int64_t id, event_type type, std::string_view data) {
  if (const auto split = split_run_lead(data); split && !split->run.empty()) {
    return std::make_shared<const event_frame>(
        make_event_frame_after_run(id, type, split->run, split->source.value_or(default_source), split->rest));
  }
  return std::make_shared<const event_frame>(make_event_frame_with_data(id, type, data));
}

// Legacy: one frame's SSE text ("id: N\nevent: T\ndata: D\n\n"), read back into its record.
frame_ptr parse_legacy_frame(std::string_view text, std::int64_t fallback_id) {
  std::int64_t id = fallback_id;
  std::string_view type, data;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.starts_with("id: "))
      std::from_chars(line.data() + 4, line.data() + line.size(), id);
    else if (line.starts_with("event: "))
      type = line.substr(7);
    else if (line.starts_with("data: "))
      data = line.substr(6);
  }
  if (data.empty()) malformed("a frame without data");
  return event_from_data(id, type_named(type), data);
}

// Legacy rows: plain frame text, one "\n\n"-ended frame after another.
std::vector<frame_ptr> split_text_frames(std::string_view frames, std::int64_t first_id) {
  std::vector<frame_ptr> out;
  while (!frames.empty()) {
    auto end = frames.find("\n\n");
    std::string_view frame = frames.substr(0, end == std::string_view::npos ? frames.size() : end + 2);
    frames.remove_prefix(frame.size());
    out.push_back(parse_legacy_frame(frame, first_id + static_cast<std::int64_t>(out.size())));
  }
  return out;
}

}  // namespace

void encode_log_frames(std::span<const frame_ptr> frames, std::string& out) {
  std::string_view run, source;
  bool run_named = false;
  for (const auto& f : frames) {
    const std::string_view data = f->data();
    // An event without a run id is stored as its whole data (a `d` record). One with a
    // run id was built with the lead (sse_format), so it splits; if one ever did not, it
    // too would be stored whole: its bytes kept, its run id then read back as none.
    const auto split = f->run_id().empty() ? std::nullopt : split_run_lead(*f);
    if (split) {
      const std::string_view from = split->source.value_or(default_source);
      if (!run_named || split->run != run || from != source) {
        run = split->run;
        source = from;
        run_named = true;
        out += 'r';
        out += run;
        // The agent's runs (nearly all events) name no source: their rows are as before sources.
        if (source != default_source) {
          out += ' ';
          out += source;
        }
        out += '\n';
      }
    }
    out += split ? 'f' : 'd';
    out += f->type_name();
    out += ' ';
    out += split ? split->rest : data;
    out += '\n';
  }
}

std::string encode_log_frames(std::span<const frame_ptr> frames) {
  std::string out;
  std::size_t bytes = 0;
  for (const auto& f : frames) bytes += f->sse.size() / 2;
  out.reserve(bytes);
  encode_log_frames(frames, out);
  return out;
}

std::vector<frame_ptr> decode_log_frames(std::string_view row, std::int64_t first_id) {
  if (row.starts_with("id: ")) return split_text_frames(row, first_id);
  std::vector<frame_ptr> out;
  std::string run, source(default_source);
  std::int64_t id = first_id;
  auto line = [&] {
    const auto nl = row.find('\n');
    if (nl == std::string_view::npos) malformed("unterminated record");
    auto l = row.substr(0, nl);
    row.remove_prefix(nl + 1);
    return l;
  };
  while (!row.empty()) {
    const char kind = row.front();
    if (kind == 't') {
      std::size_t bytes = 0;
      const auto header = line().substr(1);
      const auto [end, ec] = std::from_chars(header.data(), header.data() + header.size(), bytes);
      if (ec != std::errc{} || end != header.data() + header.size() || bytes > row.size()) malformed("bad verbatim length");
      out.push_back(parse_legacy_frame(row.substr(0, bytes), id++));
      row.remove_prefix(bytes);
      continue;
    }
    const auto l = line();
    if (kind == 'r') {
      const auto named = l.substr(1);
      const auto space = named.find(' ');
      run = std::string(named.substr(0, space));
      source = space == std::string_view::npos ? std::string(default_source) : std::string(named.substr(space + 1));
      continue;
    }
    if (kind != 'f' && kind != 'd') malformed("unknown record");
    const auto space = l.find(' ');
    if (space == std::string_view::npos) malformed("record without data");
    const event_type type = type_named(l.substr(1, space - 1));
    const auto rest = l.substr(space + 1);
    out.push_back(std::make_shared<const event_frame>(kind == 'f' ? make_event_frame_after_run(id, type, run, source, rest)
                                                                  : make_event_frame_with_data(id, type, rest)));
    ++id;
  }
  return out;
}

std::string encode_log_suffix(std::string_view row, std::int64_t first_id, std::int64_t keep_from) {
  auto frames = decode_log_frames(row, first_id);
  std::erase_if(frames, [&](const frame_ptr& f) { return f->id < keep_from; });
  return encode_log_frames(frames);
}

}  // namespace agw::core
