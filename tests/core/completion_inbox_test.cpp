// core/completion_inbox: outcomes from another thread wait for the io thread's next
// timer pass when that thread expects them, and are posted at once when it does not.
#include "core/completion_inbox.hpp"

#include <doctest/doctest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

namespace net = boost::asio;
using agw::core::completion_inbox;
using agw::core::io_strand;

namespace {

// Hands `fn` over from a thread of its own, as the journal's thread does, and waits for it.
void hand_over_from_another_thread(completion_inbox& inbox, io_strand strand, std::function<void()> fn) {
  std::vector<completion_inbox::item> items;
  items.emplace_back(std::move(strand), std::move(fn));
  std::thread([&] { inbox.hand_over(std::move(items)); }).join();
}

bool same_millisecond(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::floor<std::chrono::milliseconds>(a.time_since_epoch()) ==
         std::chrono::floor<std::chrono::milliseconds>(b.time_since_epoch());
}

// A context kept running by a work guard, its inbox and a strand on it (gone first).
struct inbox_fixture {
  net::io_context io;
  net::executor_work_guard<net::io_context::executor_type> work = net::make_work_guard(io);
  completion_inbox& inbox = completion_inbox::of(io);
  io_strand strand = net::make_strand(io.get_executor());
};

// Runs `io` until `done()`, for at most 2 s: a lost outcome fails the test, not hang it.
template <class Done>
bool run_until(net::io_context& io, Done done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!done() && std::chrono::steady_clock::now() < give_up) io.run_one_for(std::chrono::milliseconds(50));
  return done();
}

// As a run's token timers do: marks the calling thread's next `n` whole milliseconds as
// ones it has a timer due in (core/clock's timer_grains), so expect() arms a pass.
void timers_due_in_next(int n) {
  const auto now = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) agw::core::timer_grains::mark(now + std::chrono::milliseconds(i));
}

// Runs `fn` as a handler of `io` (so that it is on the context's thread).
void on_context(net::io_context& io, const std::function<void()>& fn) {
  net::post(io, fn);
  CHECK(io.poll_one() == 1);
}

}  // namespace

TEST_CASE("completion_inbox: with nothing expected an outcome is posted at once, on its strand") {
  net::io_context io;
  auto& inbox = completion_inbox::of(io);
  io_strand strand = net::make_strand(io.get_executor());
  bool ran = false;
  bool on_strand = false;
  hand_over_from_another_thread(inbox, strand, [&] {
    ran = true;
    on_strand = strand.running_in_this_thread();
  });
  CHECK(io.poll() >= 1);  // no timer: a posted handler
  CHECK(ran);
  CHECK(on_strand);
}

TEST_CASE("completion_inbox: an expected outcome waits for the armed pass, then runs on its strand") {
  // The pass is due at the next whole millisecond of the steady clock: an attempt
  // counts when the hand-over and the poll after it happened in the millisecond the
  // pass was armed in (a slow moment of this machine spoils some; they are retried).
  int counted = 0;
  for (int attempt = 0; attempt < 200 && counted < 3; ++attempt) {
    inbox_fixture fixture;
    auto& [io, work, inbox, strand] = fixture;
    std::chrono::steady_clock::time_point armed_at;
    on_context(io, [&] {
      armed_at = std::chrono::steady_clock::now();
      timers_due_in_next(1);
      inbox.expect();
    });
    bool ran = false;
    bool on_strand = false;
    hand_over_from_another_thread(inbox, strand, [&] {
      ran = true;
      on_strand = strand.running_in_this_thread();
    });
    io.poll();
    const bool ran_at_once = ran;
    if (same_millisecond(armed_at, std::chrono::steady_clock::now())) {
      ++counted;
      CHECK_FALSE(ran_at_once);  // nothing was posted: it waits for the pass
    }
    REQUIRE(run_until(io, [&] { return ran; }));
    CHECK(on_strand);
  }
  // Nearly every attempt fits in its millisecond on a quiet machine; a busy one spoils
  // some, and all of 200 only on a machine too slow to run these tests.
  CHECK(counted == 3);
}

TEST_CASE("completion_inbox: an outcome expected while a pass is armed keeps the next pass armed; then a pass lowers the flag") {
  using std::chrono::milliseconds;
  const auto ms_of = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::floor<milliseconds>(t.time_since_epoch()).count();
  };
  constexpr auto window = completion_inbox::pass_window;
  int counted = 0;
  for (int attempt = 0; attempt < 200 && counted < 3; ++attempt) {
    inbox_fixture fixture;
    auto& [io, work, inbox, strand] = fixture;
    // Two batches handed over in millisecond N: the second expect() finds the pass
    // armed. Its outcome may come after that pass, so the flag stays up through the
    // thread's next pass. The thread has timers due in N + 1 and N + 1 + pass_window
    // only, so that next pass is at N + 1 + pass_window when the first runs in time.
    std::int64_t n = 0;
    on_context(io, [&] {
      const auto now = std::chrono::steady_clock::now();
      n = ms_of(now);
      agw::core::timer_grains::mark(now + std::chrono::microseconds(1));  // N + 1
      agw::core::timer_grains::mark(std::chrono::steady_clock::time_point(milliseconds(n + 1) + window));
      inbox.expect();
      inbox.expect();
    });
    int ran = 0;
    hand_over_from_another_thread(inbox, strand, [&] { ++ran; });
    REQUIRE(run_until(io, [&] { return ran == 1; }));
    // After the first pass the second outcome still waits for a pass, not a post.
    hand_over_from_another_thread(inbox, strand, [&] { ++ran; });
    io.poll();
    const bool ran_at_once = ran == 2;
    if (ms_of(std::chrono::steady_clock::now()) < n + 1 + window.count()) {  // the second pass not due yet
      ++counted;
      CHECK_FALSE(ran_at_once);
    }
    REQUIRE(run_until(io, [&] { return ran == 2; }));
    // The second pass expected nothing more: the flag is down again, and the next
    // outcome is posted (a poll, which never waits for a timer, runs it).
    hand_over_from_another_thread(inbox, strand, [&] { ++ran; });
    io.poll();
    CHECK(ran == 3);
  }
  CHECK(counted == 3);
}

TEST_CASE("completion_inbox: with no timer of the thread due soon, expect() arms nothing and the outcome is posted") {
  // Milliseconds that earlier tests on this thread marked are past by then.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  inbox_fixture fixture;
  auto& [io, work, inbox, strand] = fixture;
  // A timer due beyond the window does not count: the outcome would wait that long.
  on_context(io, [&] {
    agw::core::timer_grains::mark(std::chrono::steady_clock::now() + completion_inbox::pass_window +
                                  std::chrono::milliseconds(20));
    inbox.expect();
  });
  bool ran = false;
  hand_over_from_another_thread(inbox, strand, [&] { ran = true; });
  io.poll();  // never waits for a timer
  CHECK(ran);
}

TEST_CASE("completion_inbox: expect() from a thread that does not run the context does nothing") {
  net::io_context io;
  auto& inbox = completion_inbox::of(io);
  io_strand strand = net::make_strand(io.get_executor());
  inbox.expect();  // this thread is not running `io`
  CHECK(completion_inbox::of_local(net::any_io_executor(strand)) == nullptr);
  bool ran = false;
  hand_over_from_another_thread(inbox, strand, [&] { ran = true; });
  io.poll();
  CHECK(ran);  // posted: no pass was armed
}

TEST_CASE("completion_inbox: outcomes handed over apart run in the order they came") {
  net::io_context io;
  auto work = net::make_work_guard(io);
  auto& inbox = completion_inbox::of(io);
  io_strand a = net::make_strand(io.get_executor());
  io_strand b = net::make_strand(io.get_executor());
  on_context(io, [&] {
    timers_due_in_next(1);
    auto* local = completion_inbox::of_local(net::any_io_executor(a));
    REQUIRE(local == &inbox);
    local->expect();
  });
  std::vector<int> order;
  std::vector<completion_inbox::item> first;
  first.emplace_back(a, [&] { order.push_back(1); });
  first.emplace_back(b, [&] { order.push_back(2); });
  std::vector<completion_inbox::item> second;
  second.emplace_back(a, [&] { order.push_back(3); });
  std::thread([&] {
    inbox.hand_over(std::move(first));
    inbox.hand_over(std::move(second));
  }).join();
  REQUIRE(run_until(io, [&] { return order.size() == 3; }));
  CHECK(order == std::vector<int>{1, 2, 3});
}

TEST_CASE("completion_inbox: outcomes waiting for a pass keep run() going until they ran") {
  // No work guard: what keeps run() from returning is the armed pass.
  net::io_context io;
  auto& inbox = completion_inbox::of(io);
  io_strand strand = net::make_strand(io.get_executor());
  on_context(io, [&] {
    timers_due_in_next(1);
    inbox.expect();
  });
  bool ran = false;
  hand_over_from_another_thread(inbox, strand, [&] { ran = true; });
  io.restart();
  io.run();
  CHECK(ran);
}

TEST_CASE("completion_inbox: a context that goes with outcomes waiting destroys them; later hand-overs are dropped") {
  auto owned = std::make_shared<int>(7);
  std::weak_ptr<int> watch = owned;
  // ~io_context shuts its services down first: here that step alone, so that the inbox
  // is still there for a late hand-over.
  struct shutting_context : net::io_context {
    using net::io_context::shutdown;
  };
  std::optional<shutting_context> io(std::in_place);
  auto& inbox = completion_inbox::of(*io);
  // Gone before the context: a strand's destructor reaches its service.
  std::optional<io_strand> strand(net::make_strand(io->get_executor()));
  on_context(*io, [&] {
    timers_due_in_next(1);
    inbox.expect();
  });
  bool ran = false;
  hand_over_from_another_thread(inbox, *strand, [&ran, keep = std::move(owned)] { ran = true; });
  CHECK_FALSE(watch.expired());
  io->shutdown();
  CHECK(watch.expired());
  auto late = std::make_shared<int>(8);
  std::weak_ptr<int> watch_late = late;
  hand_over_from_another_thread(inbox, *strand, [keep = std::move(late)] {});
  CHECK(watch_late.expired());
  strand.reset();
  io.reset();
  CHECK_FALSE(ran);
}
