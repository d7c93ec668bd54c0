#include "persistence/journal_codec.hpp"

#include <charconv>

#include "core/storage/store_error.hpp"

namespace agw::persistence {

std::string encode_journal_entries(std::span<const journal_entry* const> entries) {
  std::size_t bytes = 0;
  for (const auto* e : entries) bytes += e->batch.session_id.size() + e->thread_id.size() + e->batch.frames.size() + 80;
  std::string out;
  out.reserve(bytes);
  char number[24];
  auto put = [&](std::int64_t v, char after) {
    const auto end = std::to_chars(number, number + sizeof number, v).ptr;
    out.append(number, end);
    out += after;
  };
  for (const auto* e : entries) {
    const auto& b = e->batch;
    out += b.session_id;
    out += '\n';
    put(b.first_id, ' ');
    put(b.last_id, ' ');
    put(b.created_at_ms, ' ');
    put(static_cast<std::int64_t>(b.frames.size()), ' ');
    put(static_cast<std::int64_t>(e->thread_id.size()), '\n');
    out += e->thread_id;
    out += b.frames;
  }
  return out;
}

std::vector<journal_entry> decode_journal_entries(std::string_view in) {
  std::vector<journal_entry> out;
  auto fail = [] { throw core::store_error("malformed event journal row"); };
  auto line = [&] {
    const auto nl = in.find('\n');
    if (nl == std::string_view::npos) fail();
    auto l = in.substr(0, nl);
    in.remove_prefix(nl + 1);
    return l;
  };
  auto take = [&](std::int64_t n) {
    if (n < 0 || static_cast<std::size_t>(n) > in.size()) fail();
    auto part = in.substr(0, static_cast<std::size_t>(n));
    in.remove_prefix(static_cast<std::size_t>(n));
    return std::string(part);
  };
  while (!in.empty()) {
    journal_entry e;
    e.batch.session_id = std::string(line());
    auto numbers = line();
    std::int64_t fields[5] = {0, 0, 0, 0, 0};
    std::size_t count = 0;
    while (!numbers.empty() && count < 5) {
      const auto [end, ec] = std::from_chars(numbers.data(), numbers.data() + numbers.size(), fields[count]);
      if (ec != std::errc{}) fail();
      ++count;
      numbers.remove_prefix(static_cast<std::size_t>(end - numbers.data()));
      if (!numbers.empty() && numbers.front() == ' ') numbers.remove_prefix(1);
    }
    // Four numbers (an older row) or five (with the thread id's length).
    if (!numbers.empty() || count < 4) fail();
    e.batch.first_id = fields[0];
    e.batch.last_id = fields[1];
    e.batch.created_at_ms = fields[2];
    e.thread_id = take(fields[4]);
    e.batch.frames = take(fields[3]);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace agw::persistence
