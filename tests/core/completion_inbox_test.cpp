// core/completion_inbox: outcomes from another thread run in one posted handler of the
// io thread's, each on its strand; hand-overs before that handler ran join it; a
// hand-over longer than a slice lets the thread's other handlers in between.
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
#include <string>
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

// Runs `io` until `done()`, for at most 2 s: a lost outcome fails the test, not hang it.
template <class Done>
bool run_until(net::io_context& io, Done done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!done() && std::chrono::steady_clock::now() < give_up) io.run_one_for(std::chrono::milliseconds(50));
  return done();
}

// Runs `fn` as a handler of `io` (so that it is on the context's thread).
void on_context(net::io_context& io, const std::function<void()>& fn) {
  net::post(io, fn);
  io.restart();  // a poll that ran out of work stopped it
  CHECK(io.poll_one() == 1);
}

// A context kept running (run_until below drives it) with its inbox and two strands.
struct running_context {
  net::io_context io;
  net::executor_work_guard<net::io_context::executor_type> work = net::make_work_guard(io);
  completion_inbox& inbox = completion_inbox::of(io);
  io_strand a = io.get_executor();
  io_strand b = io.get_executor();
};

// ~io_context shuts its services down first: a test takes that step alone, so that the
// inbox is still there afterwards (for a late hand-over).
struct shutting_context : net::io_context {
  using net::io_context::shutdown;
};

}  // namespace

TEST_CASE("completion_inbox: an outcome handed over runs in a posted handler, on its strand") {
  net::io_context io;
  auto& inbox = completion_inbox::of(io);
  io_strand strand = io.get_executor();
  bool ran = false;
  bool on_strand = false;
  hand_over_from_another_thread(inbox, strand, [&] {
    ran = true;
    on_strand = strand.running_in_this_thread();
  });
  CHECK(io.poll() >= 1);
  CHECK(ran);
  CHECK(on_strand);
}

TEST_CASE("completion_inbox: hand-overs that come before the handler ran share it") {
  net::io_context io;
  auto& inbox = completion_inbox::of(io);
  inbox.set_slice(std::chrono::seconds(1));  // one handler, however slow this machine is now
  io_strand a = io.get_executor();
  io_strand b = io.get_executor();
  int ran = 0;
  hand_over_from_another_thread(inbox, a, [&] { ++ran; });
  hand_over_from_another_thread(inbox, b, [&] { ++ran; });
  hand_over_from_another_thread(inbox, a, [&] { ++ran; });
  // One handler, in which each free strand runs its completion in place.
  CHECK(io.poll() == 1);
  CHECK(ran == 3);
  // Taken: the next hand-over posts again.
  hand_over_from_another_thread(inbox, b, [&] { ++ran; });
  io.restart();
  CHECK(io.poll() == 1);
  CHECK(ran == 4);
}

TEST_CASE("completion_inbox: of_local names the inbox only on the thread that runs the context") {
  net::io_context io;
  auto& inbox = completion_inbox::of(io);
  io_strand strand = io.get_executor();
  CHECK(completion_inbox::of_local(net::any_io_executor(strand)) == nullptr);  // this thread is not running `io`
  completion_inbox* local = nullptr;
  on_context(io, [&] { local = completion_inbox::of_local(net::any_io_executor(strand)); });
  CHECK(local == &inbox);
  // An executor of another kind (an explicit strand): no inbox, whichever thread asks.
  on_context(io, [&] { local = completion_inbox::of_local(net::make_strand(io.get_executor())); });
  CHECK(local == nullptr);
}

TEST_CASE_FIXTURE(running_context, "completion_inbox: outcomes handed over apart run in the order they came") {
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

TEST_CASE_FIXTURE(running_context,
                  "completion_inbox: past its slice a handler lets the thread's other handlers run before the rest") {
  inbox.set_slice(std::chrono::milliseconds(1));
  std::vector<std::string> order;
  std::vector<completion_inbox::item> items;
  // The first outcome posts a handler (as a run that starts in its completion posts its
  // journal flush), sees another hand-over come, and takes longer than a slice.
  items.emplace_back(a, [&] {
    order.push_back("1");
    net::post(io, [&] { order.push_back("posted"); });
    hand_over_from_another_thread(inbox, b, [&] { order.push_back("later"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  });
  items.emplace_back(b, [&] { order.push_back("2"); });
  items.emplace_back(a, [&] { order.push_back("3"); });
  std::thread([&] { inbox.hand_over(std::move(items)); }).join();
  REQUIRE(run_until(io, [&] { return order.size() == 5; }));
  // Whole, the hand-over would have run 1, 2, 3 before the posted handler. The rest of
  // the slice's items still go before the hand-over that came meanwhile.
  CHECK(order == std::vector<std::string>{"1", "posted", "2", "3", "later"});
  // Nothing is left queued: the next hand-over posts again.
  int ran = 0;
  hand_over_from_another_thread(inbox, b, [&] { ++ran; });
  REQUIRE(run_until(io, [&] { return ran == 1; }));
}

TEST_CASE("completion_inbox: a context that goes with outcomes waiting destroys them; later hand-overs are dropped") {
  auto owned = std::make_shared<int>(7);
  std::weak_ptr<int> watch = owned;
  std::optional<shutting_context> io(std::in_place);
  auto& inbox = completion_inbox::of(*io);
  const io_strand strand = io->get_executor();
  bool ran = false;
  hand_over_from_another_thread(inbox, strand, [&ran, keep = std::move(owned)] { ran = true; });
  CHECK_FALSE(watch.expired());
  io->shutdown();
  CHECK(watch.expired());
  auto late = std::make_shared<int>(8);
  std::weak_ptr<int> watch_late = late;
  hand_over_from_another_thread(inbox, strand, [keep = std::move(late)] {});
  CHECK(watch_late.expired());
  io.reset();
  CHECK_FALSE(ran);
}

TEST_CASE("completion_inbox: the rest of a slice still waiting when the context goes is destroyed, not run") {
  auto owned = std::make_shared<int>(7);
  std::weak_ptr<int> watch = owned;
  std::optional<shutting_context> io(std::in_place);
  auto& inbox = completion_inbox::of(*io);
  inbox.set_slice(std::chrono::milliseconds(1));
  const io_strand strand = io->get_executor();
  bool rest_ran = false;
  std::vector<completion_inbox::item> items;
  items.emplace_back(strand, [] { std::this_thread::sleep_for(std::chrono::milliseconds(3)); });
  items.emplace_back(strand, [&rest_ran, keep = std::move(owned)] { rest_ran = true; });
  std::thread([&] { inbox.hand_over(std::move(items)); }).join();
  // One handler: the first item, past the slice; the second waits for the next one.
  CHECK(io->poll_one() == 1);
  CHECK_FALSE(rest_ran);
  CHECK_FALSE(watch.expired());
  io->shutdown();
  CHECK(watch.expired());
  io.reset();
  CHECK_FALSE(rest_ran);
}
