#include "core/clock.hpp"

#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/runs/run.hpp"
#include "tests/support/manual_clock.hpp"

namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using agw::test::manual_clock;

// Waits on `timer` until `deadline` and records how the wait ended under `name`.
net::awaitable<void> wait_and_note(agw::core::wait_timer& timer, agw::core::steady_time deadline, std::string name,
                                   std::vector<std::string>& log) {
  auto waiting = timer.wait_until(deadline);
  const bool full = co_await std::move(waiting);
  log.push_back(name + (full ? ":due" : ":cancelled"));
}

// Runs what is ready. A coroutine parked on a manual wait holds work (co_spawn's),
// so run() would not return: poll() does.
void run_ready(net::io_context& io) {
  io.restart();
  io.poll();
}

// A real timer's completion comes later: run() until nothing is pending.
void run_idle(net::io_context& io) {
  io.restart();
  io.run();
}

}  // namespace

TEST_CASE("manual_clock: time moves only when advanced; wall and steady move together") {
  manual_clock clock;
  CHECK(clock.wall_ms() == manual_clock::default_start_ms);
  const auto steady = clock.steady_now();
  CHECK(clock.steady_now() == steady);
  clock.advance(1500ms);
  CHECK(clock.wall_ms() == manual_clock::default_start_ms + 1500);
  CHECK(clock.steady_now() - steady == 1500ms);
  CHECK(manual_clock(42).wall_ms() == 42);
}

TEST_CASE("manual_clock: advancing completes the due waits, earliest first, on their executors") {
  manual_clock clock;
  net::io_context io;
  auto strand = io.get_executor();
  auto a = clock.make_timer(strand);
  auto b = clock.make_timer(strand);
  auto c = clock.make_timer(io.get_executor());
  std::vector<std::string> log;
  const auto t0 = clock.steady_now();
  net::co_spawn(strand, wait_and_note(*a, t0 + 300ms, "a", log), net::detached);
  net::co_spawn(strand, wait_and_note(*b, t0 + 100ms, "b", log), net::detached);
  net::co_spawn(io, wait_and_note(*c, t0 + 200ms, "c", log), net::detached);
  run_ready(io);
  CHECK(log.empty());
  CHECK(clock.pending_waits() == 3);
  CHECK(clock.next_deadline() == t0 + 100ms);

  clock.advance(250ms);
  CHECK(log.empty());  // completions are posted, never run inside advance()
  run_ready(io);
  CHECK(log == std::vector<std::string>{"b:due", "c:due"});
  CHECK(clock.advance_to_next());
  CHECK(clock.steady_now() == t0 + 300ms);
  run_ready(io);
  CHECK(log == std::vector<std::string>{"b:due", "c:due", "a:due"});
  CHECK_FALSE(clock.advance_to_next());
}

TEST_CASE("manual_clock: a wait already due completes without advancing; cancel ends a wait early") {
  manual_clock clock;
  net::io_context io;
  auto timer = clock.make_timer(io.get_executor());
  std::vector<std::string> log;
  net::co_spawn(io, wait_and_note(*timer, clock.steady_now(), "now", log), net::detached);
  run_ready(io);
  CHECK(log == std::vector<std::string>{"now:due"});

  net::co_spawn(io, wait_and_note(*timer, clock.steady_now() + 1h, "long", log), net::detached);
  run_ready(io);
  CHECK(clock.pending_waits() == 1);
  timer->cancel();
  run_ready(io);
  CHECK(log.back() == "long:cancelled");
  CHECK(clock.pending_waits() == 0);
  timer->cancel();  // nothing pending: nothing happens
  run_ready(io);
  CHECK(log.size() == 2);
}

TEST_CASE("real_clock: a cancelled wait ends early; a due one is full") {
  agw::core::real_clock clock;
  net::io_context io;
  auto timer = clock.make_timer(io.get_executor());
  std::vector<std::string> log;
  const auto began = clock.steady_now();
  net::co_spawn(io, wait_and_note(*timer, began + 1h, "long", log), net::detached);
  net::post(io, [&] { timer->cancel(); });
  run_idle(io);
  CHECK(log == std::vector<std::string>{"long:cancelled"});
  CHECK(clock.steady_now() - began < 10s);
  net::co_spawn(io, wait_and_note(*timer, clock.steady_now() + 1ms, "short", log), net::detached);
  run_idle(io);
  CHECK(log.back() == "short:due");
  const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
  CHECK(clock.wall_ms() - wall.count() < 1000);
}

TEST_CASE("run: sleep_until sleeps on the run's clock; an abort cuts it short") {
  manual_clock clock;
  net::io_context io;
  auto strand = io.get_executor();
  auto r = std::make_shared<agw::core::run>(strand, clock, "run-1", clock.wall_ms(), 0);
  CHECK(&r->time() == &clock);
  std::optional<bool> slept;
  auto sleep = [](std::shared_ptr<agw::core::run> r, agw::core::steady_time until,
                  std::optional<bool>& out) -> net::awaitable<void> {
    auto sleeping = r->sleep_until(until);
    out = co_await std::move(sleeping);
  };
  net::co_spawn(strand, sleep(r, clock.steady_now() + 100ms, slept), net::detached);
  run_ready(io);
  CHECK_FALSE(slept);
  clock.advance(100ms);
  run_ready(io);
  CHECK(slept == true);

  slept.reset();
  net::co_spawn(strand, sleep(r, clock.steady_now() + 1h, slept), net::detached);
  run_ready(io);
  CHECK_FALSE(slept);
  CHECK(r->request_abort());
  run_ready(io);
  CHECK(slept == false);  // the clock never moved
  CHECK(clock.pending_waits() == 0);
  // Once aborted, a sleep returns at once.
  slept.reset();
  net::co_spawn(strand, sleep(r, clock.steady_now() + 1h, slept), net::detached);
  run_ready(io);
  CHECK(slept == false);
}
