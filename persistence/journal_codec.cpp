#include "persistence/journal_codec.hpp"

#include <charconv>

#include "core/storage/store_error.hpp"

namespace agw::persistence {

std::string encode_journal_entries(std::span<const core::event_batch_record* const> batches) {
  std::size_t bytes = 0;
  for (const auto* b : batches) bytes += b->session_id.size() + b->frames.size() + 64;
  std::string out;
  out.reserve(bytes);
  char number[24];
  auto put = [&](std::int64_t v, char after) {
    const auto end = std::to_chars(number, number + sizeof number, v).ptr;
    out.append(number, end);
    out += after;
  };
  for (const auto* b : batches) {
    out += b->session_id;
    out += '\n';
    put(b->first_id, ' ');
    put(b->last_id, ' ');
    put(b->created_at_ms, ' ');
    put(static_cast<std::int64_t>(b->frames.size()), '\n');
    out += b->frames;
  }
  return out;
}

std::vector<core::event_batch_record> decode_journal_entries(std::string_view in) {
  std::vector<core::event_batch_record> out;
  auto fail = [] { throw core::store_error("malformed event journal row"); };
  auto line = [&] {
    const auto nl = in.find('\n');
    if (nl == std::string_view::npos) fail();
    auto l = in.substr(0, nl);
    in.remove_prefix(nl + 1);
    return l;
  };
  while (!in.empty()) {
    core::event_batch_record b;
    b.session_id = std::string(line());
    auto numbers = line();
    std::int64_t fields[4];
    for (auto& f : fields) {
      const auto [end, ec] = std::from_chars(numbers.data(), numbers.data() + numbers.size(), f);
      if (ec != std::errc{}) fail();
      numbers.remove_prefix(static_cast<std::size_t>(end - numbers.data()));
      if (!numbers.empty() && numbers.front() == ' ') numbers.remove_prefix(1);
    }
    if (!numbers.empty() || fields[3] < 0 || static_cast<std::size_t>(fields[3]) > in.size()) fail();
    b.first_id = fields[0];
    b.last_id = fields[1];
    b.created_at_ms = fields[2];
    b.frames = std::string(in.substr(0, static_cast<std::size_t>(fields[3])));
    in.remove_prefix(static_cast<std::size_t>(fields[3]));
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace agw::persistence
