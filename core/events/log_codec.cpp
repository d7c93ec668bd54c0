#include "core/events/log_codec.hpp"

#include <charconv>

#include "core/store.hpp"

namespace agw::core {

namespace {

constexpr std::string_view run_lead = "{\"run_id\":\"";

// The frame text make_event_frame writes for these parts.
bool standard_shape(const event_frame& f) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, f.id).ptr;
  const std::string_view id(digits, static_cast<std::size_t>(end - digits));
  const std::size_t expected = 4 + id.size() + 8 + f.type().size() + 7 + f.data().size() + 2;
  return f.id >= 0 && f.text.size() == expected && f.text.starts_with("id: ") &&
         std::string_view(f.text).substr(4, id.size()) == id && f.text.ends_with("\n\n") &&
         f.type().find_first_of(" \n") == std::string_view::npos && f.data().find('\n') == std::string_view::npos;
}

// Plain frame text, one "\n\n"-ended frame after another (rows of older versions).
std::vector<stored_event> split_text_frames(std::string_view frames) {
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

}  // namespace

void encode_log_frames(std::span<const frame_ptr> frames, std::string& out) {
  std::string_view run;
  bool run_named = false;
  for (const auto& f : frames) {
    if (!standard_shape(*f)) {
      out += 't';
      out += std::to_string(f->text.size());
      out += '\n';
      out += f->text;
      continue;
    }
    const std::string_view data = f->data();
    const bool has_run = data.starts_with(run_lead) && !f->run_id().empty();
    if (has_run && (!run_named || f->run_id() != run)) {
      run = f->run_id();
      run_named = true;
      out += 'r';
      out += run;
      out += '\n';
    }
    out += has_run ? 'f' : 'd';
    out += f->type();
    out += ' ';
    // After the run id's closing quote.
    out += has_run ? data.substr(run_lead.size() + run.size() + 1) : data;
    out += '\n';
  }
}

std::string encode_log_frames(std::span<const frame_ptr> frames) {
  std::string out;
  std::size_t bytes = 0;
  for (const auto& f : frames) bytes += f->text.size() / 2;
  out.reserve(bytes);
  encode_log_frames(frames, out);
  return out;
}

std::vector<stored_event> decode_log_frames(std::string_view row, std::int64_t first_id) {
  if (row.starts_with("id: ")) return split_text_frames(row);
  auto fail = [] { throw store_error("malformed event log row"); };
  std::vector<stored_event> out;
  std::string run;
  std::int64_t id = first_id;
  auto line = [&] {
    const auto nl = row.find('\n');
    if (nl == std::string_view::npos) fail();
    auto l = row.substr(0, nl);
    row.remove_prefix(nl + 1);
    return l;
  };
  char digits[24];
  while (!row.empty()) {
    const char kind = row.front();
    if (kind == 't') {
      std::size_t bytes = 0;
      const auto header = line().substr(1);
      const auto [end, ec] = std::from_chars(header.data(), header.data() + header.size(), bytes);
      if (ec != std::errc{} || end != header.data() + header.size() || bytes > row.size()) fail();
      out.push_back({id++, std::string(row.substr(0, bytes))});
      row.remove_prefix(bytes);
      continue;
    }
    const auto l = line();
    if (kind == 'r') {
      run = std::string(l.substr(1));
      continue;
    }
    if (kind != 'f' && kind != 'd') fail();
    const auto space = l.find(' ');
    if (space == std::string_view::npos) fail();
    const auto type = l.substr(1, space - 1);
    const auto rest = l.substr(space + 1);
    const auto id_end = std::to_chars(digits, digits + sizeof digits, id).ptr;
    stored_event e;
    e.id = id++;
    auto& text = e.frame;
    text.reserve(24 + type.size() + rest.size() + run.size() + run_lead.size());
    text += "id: ";
    text.append(digits, id_end);
    text += "\nevent: ";
    text += type;
    text += "\ndata: ";
    if (kind == 'f') {
      text += run_lead;
      text += run;
      text += '"';
    }
    text += rest;
    text += "\n\n";
    out.push_back(std::move(e));
  }
  return out;
}

std::string encode_log_suffix(std::string_view row, std::int64_t first_id, std::int64_t keep_from) {
  std::vector<frame_ptr> kept;
  for (auto& e : decode_log_frames(row, first_id))
    if (e.id >= keep_from) kept.push_back(std::make_shared<const event_frame>(std::move(e.frame)));
  return encode_log_frames(kept);
}

}  // namespace agw::core
