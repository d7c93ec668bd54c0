// The heartbeat wheel on a manual clock (time moves only when the test says so),
// then on the real clock with two io threads and members on their own strands.
#include "gateway/heartbeat_wheel.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "tests/support/manual_clock.hpp"

namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using agw::core::steady_time;
using agw::gateway::heartbeat_wheel;
using agw::test::manual_clock;

// Records the time of each wake, on its own executor.
struct probe final : heartbeat_wheel::member {
  probe(net::any_io_executor ex, const agw::core::clock& c) : executor(std::move(ex)), clock(c) {}
  void on_due(std::shared_ptr<member> self) override {
    net::dispatch(executor, [this, self] { woken.push_back(clock.steady_now()); });
  }
  net::any_io_executor executor;
  const agw::core::clock& clock;
  std::vector<steady_time> woken;
};

// Runs what is ready (the wheel's loop parked on the manual clock holds work: run() would not return).
void run_ready(net::io_context& io) {
  io.restart();
  io.poll();
}

// Moves the clock on and runs what that made ready.
void pass(manual_clock& clock, net::io_context& io, std::chrono::steady_clock::duration d) {
  clock.advance(d);
  run_ready(io);
}

struct fixture {
  fixture() : wheel(io, clock, 250ms, 16) { run_ready(io); }  // the loop parks on its first tick
  std::shared_ptr<probe> make_probe() { return std::make_shared<probe>(io.get_executor(), clock); }

  manual_clock clock;
  net::io_context io;
  heartbeat_wheel wheel;
};

TEST_CASE("heartbeat_wheel: a member is woken at the first tick at or after its time, never before") {
  fixture f;
  const steady_time start = f.clock.steady_now();
  auto on_tick = f.make_probe();
  auto between = f.make_probe();
  f.wheel.schedule(on_tick, start + 1s);      // tick 4 exactly
  f.wheel.schedule(between, start + 1100ms);  // between ticks 4 and 5
  pass(f.clock, f.io, 999ms);
  CHECK(on_tick->woken.empty());
  CHECK(between->woken.empty());
  pass(f.clock, f.io, 1ms);
  REQUIRE(on_tick->woken.size() == 1);
  CHECK(on_tick->woken[0] == start + 1s);
  CHECK(between->woken.empty());
  pass(f.clock, f.io, 200ms);  // 1.2 s: no tick since 1 s
  CHECK(between->woken.empty());
  pass(f.clock, f.io, 50ms);
  REQUIRE(between->woken.size() == 1);
  CHECK(between->woken[0] == start + 1250ms);
  // Once each: taken means unscheduled.
  pass(f.clock, f.io, 10s);
  CHECK(on_tick->woken.size() == 1);
  CHECK(between->woken.size() == 1);
  CHECK(f.wheel.size() == 0);
}

TEST_CASE("heartbeat_wheel: the wheel keeps a scheduled member alive, and only while scheduled") {
  fixture f;
  auto m = f.make_probe();
  f.wheel.schedule(m, f.clock.steady_now() + 500ms);
  CHECK(m.use_count() == 2);
  SUBCASE("until it is woken") {
    pass(f.clock, f.io, 500ms);
    CHECK(m->woken.size() == 1);
    CHECK(m.use_count() == 1);
  }
  SUBCASE("until it is cancelled: then it is not woken") {
    f.wheel.cancel(*m);
    f.wheel.cancel(*m);  // twice is nothing
    CHECK(m.use_count() == 1);
    pass(f.clock, f.io, 2s);
    CHECK(m->woken.empty());
  }
  SUBCASE("a member nobody else holds lives until its wake") {
    std::weak_ptr<probe> weak = m;
    auto* raw = m.get();
    m.reset();
    CHECK_FALSE(weak.expired());
    pass(f.clock, f.io, 500ms);
    CHECK(weak.expired());  // the wake's handler held it last
    (void)raw;
  }
}

TEST_CASE("heartbeat_wheel: scheduling again moves the wake; a time already passed means the next tick") {
  fixture f;
  const steady_time start = f.clock.steady_now();
  auto m = f.make_probe();
  f.wheel.schedule(m, start + 1s);
  f.wheel.schedule(m, start + 3s);  // later
  CHECK(f.wheel.size() == 1);
  pass(f.clock, f.io, 2s);
  CHECK(m->woken.empty());
  f.wheel.schedule(m, start);  // earlier than now: the next tick (2.25 s)
  pass(f.clock, f.io, 250ms);
  REQUIRE(m->woken.size() == 1);
  CHECK(m->woken[0] == start + 2250ms);
  pass(f.clock, f.io, 5s);
  CHECK(m->woken.size() == 1);
}

TEST_CASE("heartbeat_wheel: times beyond one revolution (16 slots x 250 ms = 4 s) still wake on time") {
  fixture f;
  const steady_time start = f.clock.steady_now();
  auto m = f.make_probe();
  f.wheel.schedule(m, start + 30s);
  for (int i = 0; i < 119; ++i) pass(f.clock, f.io, 250ms);
  CHECK(m->woken.empty());
  pass(f.clock, f.io, 250ms);
  REQUIRE(m->woken.size() == 1);
  CHECK(m->woken[0] == start + 30s);
}

TEST_CASE("heartbeat_wheel: a late tick wakes everything due by then at once") {
  fixture f;
  const steady_time start = f.clock.steady_now();
  std::vector<std::shared_ptr<probe>> members;
  for (int i = 1; i <= 10; ++i) {
    members.push_back(f.make_probe());
    f.wheel.schedule(members.back(), start + i * 300ms);
  }
  pass(f.clock, f.io, 2s);  // one jump: the loop advances once, to tick 8
  int woken = 0;
  for (const auto& m : members) woken += static_cast<int>(m->woken.size());
  CHECK(woken == 6);  // 0.3 .. 1.8 s
  pass(f.clock, f.io, 1s);
  woken = 0;
  for (const auto& m : members) woken += static_cast<int>(m->woken.size());
  CHECK(woken == 10);
}

TEST_CASE("heartbeat_wheel: destroying the wheel releases what it held; later schedules are ignored") {
  manual_clock clock;
  net::io_context io;
  auto m = std::make_shared<probe>(io.get_executor(), clock);
  {
    heartbeat_wheel wheel(io, clock, 250ms);
    run_ready(io);
    wheel.schedule(m, clock.steady_now() + 1s);
    CHECK(m.use_count() == 2);
  }
  CHECK(m.use_count() == 1);
  pass(clock, io, 5s);  // the loop's wait was cancelled: it ends, nothing is woken
  CHECK(m->woken.empty());
}

TEST_CASE("heartbeat_wheel: tick_for is a twentieth of the shorter interval, within [10 ms, 250 ms]") {
  CHECK(heartbeat_wheel::tick_for(15s, 30s) == 250ms);
  CHECK(heartbeat_wheel::tick_for(5s, 30s) == 250ms);
  CHECK(heartbeat_wheel::tick_for(1s, 30s) == 50ms);
  CHECK(heartbeat_wheel::tick_for(15s, 1s) == 50ms);
  CHECK(heartbeat_wheel::tick_for(200ms, 30s) == 10ms);
  CHECK(heartbeat_wheel::tick_for(10ms, 30s) == 10ms);
}

TEST_CASE("heartbeat_wheel: of() is one wheel per io_context") {
  net::io_context a;
  net::io_context b;
  auto& wa = heartbeat_wheel::of(a.get_executor(), 50ms);
  CHECK(&heartbeat_wheel::of(a.get_executor(), 250ms) == &wa);  // the first caller's tick stays
  CHECK(wa.tick() == 50ms);
  CHECK(&heartbeat_wheel::of(b.get_executor(), 50ms) != &wa);
}

// Members on their own strands, rescheduling themselves from their wakes, while two
// threads run the io_context: every wake comes once, never before its time.
struct bouncer final : heartbeat_wheel::member, std::enable_shared_from_this<bouncer> {
  bouncer(net::io_context& io, heartbeat_wheel& w, std::atomic<int>& left) : strand(net::make_strand(io)), wheel(w), left(left) {}
  void on_due(std::shared_ptr<member> self) override {
    net::dispatch(strand, [this, self] { woken(); });
  }
  void woken() {
    const auto now = wheel.now();
    if (now < due) early = true;
    if (++wakes == 5) {
      --left;
      return;
    }
    due = now + std::chrono::milliseconds(rng() % 40);
    wheel.schedule(shared_from_this(), due);
  }
  net::strand<net::io_context::executor_type> strand;
  heartbeat_wheel& wheel;
  std::atomic<int>& left;
  std::minstd_rand rng{std::random_device{}()};
  steady_time due{};
  int wakes = 0;
  bool early = false;
};

TEST_CASE("heartbeat_wheel: many members rescheduling on their strands over two io threads") {
  net::io_context io(2);
  agw::core::real_clock clock;
  std::atomic<int> left{500};
  std::vector<std::shared_ptr<bouncer>> all;
  {
    heartbeat_wheel wheel(io, clock, 5ms);
    for (int i = 0; i < 500; ++i) all.push_back(std::make_shared<bouncer>(io, wheel, left));
    // Scheduled from the members' strands, as streams do.
    for (auto& b : all)
      net::post(b->strand, [b] {
        b->due = b->wheel.now() + 10ms;
        b->wheel.schedule(b, b->due);
      });
    auto guard = net::make_work_guard(io);
    std::thread second([&] { io.run(); });
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (left.load() > 0 && std::chrono::steady_clock::now() < until) io.run_one_for(5ms);
    guard.reset();
    io.stop();
    second.join();
    CHECK(wheel.size() == 0);
  }
  CHECK(left.load() == 0);
  for (const auto& b : all) {
    CHECK(b->wakes == 5);
    CHECK_FALSE(b->early);
    CHECK(b.use_count() == 1);
  }
}

}  // namespace
