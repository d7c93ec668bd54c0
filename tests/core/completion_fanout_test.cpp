// core/completion_fanout: completions for many sessions, one hand-over per io_context
// (core/completion_inbox: one posted handler); other executors get a post each.
#include "core/completion_fanout.hpp"

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "core/completion_inbox.hpp"

namespace net = boost::asio;
using agw::core::completion_fanout;
using agw::core::io_strand;

TEST_CASE("completion_fanout: one handler per io_context runs every completion on that context") {
  net::io_context a, b;
  // One handler each, however slow this machine is now.
  for (auto* c : {&a, &b}) agw::core::completion_inbox::of(*c).set_slice(std::chrono::seconds(1));
  std::vector<io_strand> strands{a.get_executor(), a.get_executor(), b.get_executor()};
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

TEST_CASE("completion_fanout: completions on executors of another kind get a post each, after the context's handler") {
  net::io_context io;
  agw::core::completion_inbox::of(io).set_slice(std::chrono::seconds(1));  // one handler, however slow this machine is now
  // Explicit strands are not the contexts' own executors (core/io_executor.hpp): the
  // fanout cannot hand them to an inbox, each gets a post of its own.
  auto other_a = net::make_strand(io.get_executor());
  auto other_b = net::make_strand(io.get_executor());
  std::vector<std::string> order;
  completion_fanout fanout;
  fanout.add(io.get_executor(), [&] { order.push_back("context 1"); });
  fanout.add(other_a, [&] { order.push_back("strand a"); });
  fanout.add(io.get_executor(), [&] { order.push_back("context 2"); });
  fanout.add(other_b, [&] { order.push_back("strand b"); });
  fanout.hand_over_all();
  // The inbox's handler (both of the context's completions, in order), then a handler per post.
  CHECK(io.poll_one() == 1);
  CHECK(order == std::vector<std::string>{"context 1", "context 2"});
  CHECK(io.poll() == 2);
  CHECK(order == std::vector<std::string>{"context 1", "context 2", "strand a", "strand b"});
}
