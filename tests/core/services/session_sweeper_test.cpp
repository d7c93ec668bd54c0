// core::session_sweeper over the fake store, on a manual clock: what expires, in
// batches, and what a sweep leaves alone.
#include "core/services/session_sweeper.hpp"

#include <doctest/doctest.h>

#include "tests/core/services/services_fixture.hpp"
#include "tests/support/manual_clock.hpp"

using namespace agw::test;

TEST_CASE("session sweeper: expires idle sessions by their TTL, a batch at a time") {
  manual_clock clock;
  services_fixture fx(clock);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(fx.create().session.id);
  const auto never = fx.create(R"({"ttl_seconds":0})").session.id;
  const auto longer = fx.create(R"({"ttl_seconds":7200})").session.id;
  auto sweeper = std::make_shared<agw::core::session_sweeper>(
      fx.store, fx.hub, clock, agw::core::session_sweeper::options{.default_ttl_ms = 3600 * 1000, .batch = 2});

  CHECK(fx.await(sweeper->sweep()) == 0);  // nothing is idle yet
  clock.advance(std::chrono::seconds(3601));
  CHECK(fx.await(sweeper->sweep()) == 5);  // three batches: 2, 2, 1
  for (const auto& id : ids) CHECK(error_of([&] { fx.await(fx.sessions.get(id)); }) == agw::core::error_code::not_found);
  CHECK(fx.await(fx.sessions.get(never)).session.id == never);
  CHECK(fx.await(fx.sessions.get(longer)).session.id == longer);

  clock.advance(std::chrono::seconds(3600));
  CHECK(fx.await(sweeper->sweep()) == 1);
  CHECK(fx.await(fx.sessions.list({})).total == 1);
}

TEST_CASE("session sweeper: activity moves the expiry") {
  manual_clock clock;
  services_fixture fx(clock);
  fx.sessions.set_default_ttl_ms(60 * 1000);
  const auto id = fx.create().session.id;
  auto sweeper = std::make_shared<agw::core::session_sweeper>(fx.store, fx.hub, clock,
                                                              agw::core::session_sweeper::options{.default_ttl_ms = 60 * 1000});
  clock.advance(std::chrono::seconds(50));
  fx.await(fx.sessions.patch(id, boost::json::parse(R"({"title":"touched"})")));
  clock.advance(std::chrono::seconds(50));
  CHECK(fx.await(sweeper->sweep()) == 0);
  auto s = fx.await(fx.sessions.get(id));
  REQUIRE(s.session.expires_at_ms);
  CHECK(*s.session.expires_at_ms == s.session.updated_at_ms + 60 * 1000);
  clock.advance(std::chrono::seconds(11));
  CHECK(fx.await(sweeper->sweep()) == 1);
}
