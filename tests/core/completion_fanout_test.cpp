// core/completion_fanout: completions for many strands, one hand-over per io_context
// (core/completion_inbox: one posted handler).
#include "core/completion_fanout.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/completion_inbox.hpp"

namespace net = boost::asio;
using agw::core::completion_fanout;
using agw::core::io_strand;

TEST_CASE("completion_fanout: one handler per io_context runs every completion on its own strand") {
  net::io_context a, b;
  // One handler each, however slow this machine is now.
  for (auto* c : {&a, &b}) agw::core::completion_inbox::of(*c).set_slice(std::chrono::seconds(1));
  std::vector<io_strand> strands{net::make_strand(a.get_executor()), net::make_strand(a.get_executor()),
                                 net::make_strand(b.get_executor())};
  std::vector<int> ran;
  std::vector<bool> on_strand;
  completion_fanout fanout;
  for (int i = 0; i < 3; ++i)
    fanout.add(strands[static_cast<std::size_t>(i)], [&, i] {
      ran.push_back(i);
      on_strand.push_back(strands[static_cast<std::size_t>(i)].running_in_this_thread());
    });
  fanout.hand_over_all();
  // One handler ran on `a` ran both of a's completions, in the order they were added.
  CHECK(a.poll_one() == 1);
  CHECK(ran == std::vector<int>{0, 1});
  CHECK(b.poll_one() == 1);
  CHECK(ran == std::vector<int>{0, 1, 2});
  CHECK(on_strand == std::vector<bool>{true, true, true});
  CHECK(a.poll() == 0);
  CHECK(b.poll() == 0);
}

TEST_CASE("completion_fanout: a busy strand runs its completion after what it is running; other executors get a post each") {
  net::io_context io;
  auto work = net::make_work_guard(io);
  io_strand strand = net::make_strand(io.get_executor());
  std::mutex m;
  std::vector<std::string> order;
  auto note = [&](const std::string& what) {
    std::lock_guard lock(m);
    order.push_back(what);
  };
  auto noted = [&](std::size_t n) {
    for (int i = 0; i < 5000; ++i) {
      {
        std::lock_guard lock(m);
        if (order.size() >= n) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  };
  std::atomic<bool> release{false};
  net::post(strand, [&] {
    note("strand busy");
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    note("strand free");
  });
  std::thread t1([&] { io.run(); }), t2([&] { io.run(); });
  REQUIRE(noted(1));
  completion_fanout fanout;
  fanout.add(strand, [&] { note("completion"); });
  fanout.add(io.get_executor(), [&] { note("plain executor"); });
  fanout.hand_over_all();
  REQUIRE(noted(2));  // the plain post ran on the other thread meanwhile
  release = true;
  REQUIRE(noted(4));
  work.reset();
  t1.join();
  t2.join();
  CHECK(order == std::vector<std::string>{"strand busy", "plain executor", "strand free", "completion"});
}
