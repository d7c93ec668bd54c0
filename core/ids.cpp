#include "core/ids.hpp"

#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>
#include <chrono>
#include <cstdint>

namespace agw::core {

std::string new_uuid() {
  thread_local boost::uuids::random_generator generator;
  boost::uuids::uuid id = generator();
  // RFC 9562 version 7: 48 bits of Unix milliseconds, then 12 bits of the millisecond's
  // fraction (its method 3), so ids made later sort later. Every table keyed by an id
  // (messages, sessions) then inserts at the right edge of its index instead of at a
  // random leaf: one hot page per commit rather than one dirtied page per row.
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const auto ms = static_cast<std::uint64_t>(ns / 1'000'000);
  const auto fraction = static_cast<std::uint32_t>((ns % 1'000'000) * 4096 / 1'000'000);  // 0..4095
  for (int i = 0; i < 6; ++i) id.data[i] = static_cast<std::uint8_t>(ms >> (40 - 8 * i));
  id.data[6] = static_cast<std::uint8_t>(0x70 | (fraction >> 8));
  id.data[7] = static_cast<std::uint8_t>(fraction & 0xff);
  id.data[8] = static_cast<std::uint8_t>(0x80 | (id.data[8] & 0x3f));  // the RFC variant; the rest stays random
  return boost::uuids::to_string(id);
}

bool is_uuid(std::string_view text) {
  if (text.size() != 36) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

}  // namespace agw::core
