#include "core/timer_wheel.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <vector>

namespace {

using agw::core::timer_wheel;

struct entry : timer_wheel::hook {
  int name = 0;
};

// The names of the entries one advance took, in the order taken.
std::vector<int> advance(timer_wheel& wheel, std::uint64_t tick) {
  std::vector<int> taken;
  wheel.advance(tick, [&](timer_wheel::hook& h) {
    CHECK_FALSE(h.scheduled());  // unscheduled before the call
    taken.push_back(static_cast<entry&>(h).name);
  });
  return taken;
}

TEST_CASE("timer_wheel: entries are taken at their tick, not before, in the order scheduled") {
  timer_wheel wheel(8);
  std::array<entry, 4> e;
  for (int i = 0; i < 4; ++i) e[i].name = i;
  wheel.schedule(e[0], 3);
  wheel.schedule(e[1], 1);
  wheel.schedule(e[2], 3);
  wheel.schedule(e[3], 5);
  CHECK(wheel.size() == 4);
  CHECK(advance(wheel, 1) == std::vector<int>{1});
  CHECK(advance(wheel, 2).empty());
  CHECK(advance(wheel, 3) == std::vector<int>{0, 2});
  // Several ticks at once take everything due by the last.
  CHECK(advance(wheel, 7) == std::vector<int>{3});
  CHECK(wheel.size() == 0);
  CHECK(wheel.now() == 7);
}

TEST_CASE("timer_wheel: an entry more than a revolution ahead waits for its round") {
  timer_wheel wheel(4);  // slots 0..3: tick 9 shares tick 1's slot
  entry late;
  late.name = 9;
  wheel.schedule(late, 9);
  CHECK(advance(wheel, 1).empty());
  CHECK(advance(wheel, 5).empty());
  CHECK(advance(wheel, 8).empty());
  CHECK(late.scheduled());
  CHECK(advance(wheel, 9) == std::vector<int>{9});
  // A jump of many revolutions still finds it (each slot visited once).
  wheel.schedule(late, 100);
  CHECK(advance(wheel, 1000) == std::vector<int>{9});
}

TEST_CASE("timer_wheel: moving and cancelling") {
  timer_wheel wheel(8);
  entry a, b;
  a.name = 1;
  b.name = 2;
  wheel.schedule(a, 2);
  wheel.schedule(b, 2);
  // Moved: only the later time counts.
  wheel.schedule(a, 4);
  CHECK(wheel.size() == 2);
  CHECK(a.due() == 4);
  wheel.cancel(b);
  wheel.cancel(b);  // twice is nothing
  CHECK_FALSE(b.scheduled());
  CHECK(advance(wheel, 3).empty());
  CHECK(advance(wheel, 4) == std::vector<int>{1});
  CHECK(wheel.size() == 0);
}

TEST_CASE("timer_wheel: a time not after now means the next tick") {
  timer_wheel wheel(8);
  CHECK(advance(wheel, 5).empty());
  entry past;
  past.name = 1;
  wheel.schedule(past, 2);
  CHECK(past.due() == 6);
  wheel.schedule(past, 5);
  CHECK(past.due() == 6);
  CHECK(advance(wheel, 6) == std::vector<int>{1});
  // An advance that is not ahead does nothing.
  wheel.schedule(past, 7);
  CHECK(advance(wheel, 6).empty());
  CHECK(wheel.now() == 6);
}

TEST_CASE("timer_wheel: clear takes everything") {
  timer_wheel wheel(2);  // rounded up from nothing smaller than 2
  std::array<entry, 5> e;
  for (int i = 0; i < 5; ++i) {
    e[i].name = i;
    wheel.schedule(e[i], static_cast<std::uint64_t>(10 * i + 1));
  }
  int taken = 0;
  wheel.clear([&](timer_wheel::hook& h) {
    CHECK_FALSE(h.scheduled());
    ++taken;
  });
  CHECK(taken == 5);
  CHECK(wheel.size() == 0);
  CHECK(advance(wheel, 100).empty());
}

}  // namespace
