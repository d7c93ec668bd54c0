// core/periodic: repeat_every on a manual clock (no sleeping): one pass per interval,
// counted from the end of the previous one; a throwing pass does not end the loop;
// stop ends it at the next pause.
#include "core/periodic.hpp"

#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <stdexcept>

#include "tests/support/manual_clock.hpp"

namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using agw::test::manual_clock;

void run_ready(net::io_context& io) {
  io.restart();
  io.poll();
}

}  // namespace

TEST_CASE("repeat_every: a pass per interval; a failed pass is retried at the next; stop ends the loop") {
  manual_clock clock;
  net::io_context io;
  std::atomic<bool> stopped{false};
  int passes = 0;
  bool ended = false;
  auto pass = [&passes]() -> net::awaitable<void> {
    ++passes;
    if (passes == 2) throw std::runtime_error("the store is busy");
    co_return;
  };
  auto loop = [&]() -> net::awaitable<void> {
    auto repeating = agw::core::repeat_every(clock, 100ms, stopped, pass, "test duty");
    co_await std::move(repeating);
    ended = true;
  };
  net::co_spawn(io, loop(), net::detached);
  run_ready(io);
  CHECK(passes == 0);  // the first pass waits one interval
  clock.advance(99ms);
  run_ready(io);
  CHECK(passes == 0);
  clock.advance(1ms);
  run_ready(io);
  CHECK(passes == 1);
  clock.advance(100ms);
  run_ready(io);
  CHECK(passes == 2);  // threw
  CHECK_FALSE(ended);
  clock.advance(100ms);
  run_ready(io);
  CHECK(passes == 3);  // and the loop went on
  stopped = true;
  clock.advance(100ms);
  run_ready(io);
  CHECK(passes == 3);
  CHECK(ended);
  CHECK(clock.pending_waits() == 0);
}
