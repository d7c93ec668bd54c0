#include "core/services/event_service.hpp"

#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <chrono>

#include "core/runs/session_channel.hpp"
#include "tests/core/services/services_fixture.hpp"
#include "tests/support/manual_clock.hpp"

namespace {

using namespace std::chrono_literals;
using agw::core::error_code;
using agw::test::error_of;
using agw::test::services_fixture;

}  // namespace

TEST_CASE("event_service: read_after returns committed events after the cursor") {
  services_fixture f;
  auto s = f.create();
  auto channel = f.await(f.events.channel(s.session.id));
  REQUIRE(channel);
  CHECK(channel == f.hub.find(s.session.id));
  boost::asio::post(channel->strand(), [channel] {
    for (int i = 0; i < 3; ++i) channel->publish("r", agw::core::event_type::token, "content", "t");
  });
  f.settle();
  auto all = f.await(f.events.read_after(s.session.id, 0, 10, 0s));
  CHECK(all.size() == 3);
  auto tail = f.await(f.events.read_after(s.session.id, 2, 10, 0s));
  REQUIRE(tail.size() == 1);
  CHECK(tail[0]->id == 3);
}

TEST_CASE("event_service: with nothing after the cursor, read_after waits for the first event") {
  services_fixture f;
  auto s = f.create();
  auto channel = f.await(f.events.channel(s.session.id));
  // Published while the poll waits: the commit wakes it, long before its 30 s.
  boost::asio::post(f.io, [channel] {
    boost::asio::post(channel->strand(), [channel] { channel->publish("r", agw::core::event_type::token, "content", "late"); });
  });
  const auto began = std::chrono::steady_clock::now();
  auto events = f.await(f.events.read_after(s.session.id, 0, 10, 30s));
  CHECK(std::chrono::steady_clock::now() - began < 10s);
  REQUIRE(events.size() == 1);
  CHECK(events[0]->id == 1);
}

TEST_CASE("event_service: an empty wait ends at its deadline; unknown sessions are not_found") {
  services_fixture f;
  auto s = f.create();
  const auto began = std::chrono::steady_clock::now();
  CHECK(f.await(f.events.read_after(s.session.id, 0, 10, 50ms)).empty());
  CHECK(std::chrono::steady_clock::now() - began >= 50ms);
  CHECK(error_of([&] { f.await(f.events.channel("00000000-0000-4000-8000-000000000000")); }) == error_code::not_found);
}

TEST_CASE("event_service: on a manual clock, an empty long poll ends exactly at its deadline") {
  agw::test::manual_clock clock;
  services_fixture f(clock);
  auto s = f.create();
  bool done = false;
  std::size_t got = 99;
  boost::asio::co_spawn(f.io, f.events.read_after(s.session.id, 0, 10, 30s),
                        [&](std::exception_ptr e, std::vector<agw::core::frame_ptr> events) {
                          REQUIRE_FALSE(e);
                          got = events.size();
                          done = true;
                        });
  f.run_until([&] { return clock.pending_waits() == 1; });
  clock.advance(30s - 1ms);
  f.poll();
  CHECK_FALSE(done);
  clock.advance(1ms);
  f.run_until([&] { return done; });
  CHECK(got == 0);
}
