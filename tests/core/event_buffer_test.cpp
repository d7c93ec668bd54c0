#include "core/events/event_buffer.hpp"

#include <doctest/doctest.h>

#include "core/events/sse_format.hpp"

#include <cstdint>
#include <memory>
#include <vector>

// Prints id lists in failure messages.
template <>
struct doctest::StringMaker<std::vector<std::int64_t>> {
  static doctest::String convert(const std::vector<std::int64_t>& ids) {
    std::string out = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
    return (out + "]").c_str();
  }
};

namespace {

using agw::core::event_buffer;
using agw::core::event_frame;
using agw::core::frame_ptr;

frame_ptr frame(std::int64_t id) {
  return std::make_shared<event_frame>(agw::core::make_event_frame(id, agw::core::event_type::token, "r", "content", "t"));
}

std::vector<std::int64_t> ids(const std::vector<frame_ptr>& frames) {
  std::vector<std::int64_t> out;
  for (const auto& f : frames) out.push_back(f->id);
  return out;
}

std::vector<std::int64_t> range(std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = first; i <= last; ++i) out.push_back(i);
  return out;
}

}  // namespace

TEST_CASE("event_buffer: empty buffer") {
  event_buffer ring(4);
  CHECK(ring.size() == 0);
  CHECK(ring.oldest_id() == 0);
  CHECK(ring.newest_id() == 0);
  CHECK(ring.after(0).empty());
  CHECK(ring.after(-5).empty());
  CHECK(ring.after(100).empty());
}

TEST_CASE("event_buffer: fills, then wraps around keeping the newest capacity frames") {
  struct row {
    std::size_t capacity;
    std::int64_t first_id;
    std::int64_t pushed;  // frames first_id .. first_id + pushed - 1
  };
  const row rows[] = {
      {4, 1, 1},  {4, 1, 3}, {4, 1, 4}, {4, 1, 5},  {4, 1, 7},   {4, 1, 8},    {4, 1, 9},
      {4, 1, 23}, {1, 1, 1}, {1, 1, 2}, {1, 1, 10}, {3, 41, 10}, {5, 1000, 5}, {5, 1000, 6},
  };
  for (const auto& r : rows) {
    CAPTURE(r.capacity);
    CAPTURE(r.first_id);
    CAPTURE(r.pushed);
    event_buffer ring(r.capacity);
    for (std::int64_t i = 0; i < r.pushed; ++i) ring.push(frame(r.first_id + i));
    const std::int64_t newest = r.first_id + r.pushed - 1;
    const std::int64_t held = std::min<std::int64_t>(r.pushed, static_cast<std::int64_t>(r.capacity));
    const std::int64_t oldest = newest - held + 1;
    CHECK(ring.size() == static_cast<std::size_t>(held));
    CHECK(ring.oldest_id() == oldest);
    CHECK(ring.newest_id() == newest);
    // Cursor before the oldest, at every position inside, at the newest, beyond.
    CHECK(ids(ring.after(0)) == range(oldest, newest));
    CHECK(ids(ring.after(oldest - 1)) == range(oldest, newest));
    CHECK(ids(ring.after(oldest - 100)) == range(oldest, newest));
    for (std::int64_t cursor = oldest; cursor <= newest; ++cursor) {
      CAPTURE(cursor);
      CHECK(ids(ring.after(cursor)) == range(cursor + 1, newest));
    }
    CHECK(ring.after(newest).empty());
    CHECK(ring.after(newest + 1).empty());
    CHECK(ring.after(INT64_MAX).empty());
  }
}

TEST_CASE("event_buffer: capacity 0 behaves as capacity 1") {
  event_buffer ring(0);
  ring.push(frame(1));
  ring.push(frame(2));
  CHECK(ring.size() == 1);
  CHECK(ring.oldest_id() == 2);
  CHECK(ring.newest_id() == 2);
  CHECK(ids(ring.after(1)) == std::vector<std::int64_t>{2});
  CHECK(ring.after(2).empty());
}

TEST_CASE("event_buffer: after() shares the pushed frames, it does not copy them") {
  event_buffer ring(2);
  auto f = frame(7);
  ring.push(f);
  auto out = ring.after(6);
  REQUIRE(out.size() == 1);
  CHECK(out[0].get() == f.get());
  // An overwritten slot drops the ring's reference; the caller's copy survives.
  ring.push(frame(8));
  ring.push(frame(9));
  CHECK(out[0]->id == 7);
  CHECK(f.use_count() == 2);  // f and out[0]
}

TEST_CASE("event_buffer: clear empties the ring and it refills from the next id") {
  event_buffer ring(3);
  for (std::int64_t id = 1; id <= 5; ++id) ring.push(frame(id));
  CHECK(ids(ring.after(0)) == range(3, 5));
  ring.clear();
  CHECK(ring.size() == 0);
  CHECK(ring.oldest_id() == 0);
  CHECK(ring.newest_id() == 0);
  CHECK(ring.after(0).empty());
  for (std::int64_t id = 6; id <= 9; ++id) ring.push(frame(id));
  CHECK(ids(ring.after(0)) == range(7, 9));
  CHECK(ids(ring.after(7)) == range(8, 9));
}
