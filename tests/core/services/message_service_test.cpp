#include "core/services/message_service.hpp"

#include <doctest/doctest.h>

#include "tests/core/services/services_fixture.hpp"

namespace {

using agw::core::error_code;
using agw::core::start_request;
using agw::test::error_of;
using agw::test::services_fixture;

}  // namespace

TEST_CASE("message_service: list pages a run's messages; rebuild restores a lost projection") {
  services_fixture f;
  auto s = f.create();
  f.await(f.runs.start(s.session, start_request{"one two", std::nullopt, std::nullopt}));
  f.settle();
  auto page = f.await(f.messages.list(s.session.id, 1, 0));
  CHECK(page.page.total == 2);
  REQUIRE(page.page.messages.size() == 1);
  CHECK(page.has_more);
  CHECK_FALSE(f.await(f.messages.list(s.session.id, 5, 0)).has_more);

  f.db.seed([&](agw::test::fake_data& d) { d.messages.clear(); });
  CHECK(f.await(f.messages.list(s.session.id, 50, 0)).page.total == 0);
  CHECK(f.await(f.messages.rebuild(s.session.id)) == 2);
  CHECK(f.await(f.messages.list(s.session.id, 50, 0)).page.total == 2);
}

TEST_CASE("message_service: an unknown session is not_found") {
  services_fixture f;
  CHECK(error_of([&] { f.await(f.messages.list("not-a-uuid", 50, 0)); }) == error_code::not_found);
  CHECK(error_of([&] { f.await(f.messages.rebuild("00000000-0000-4000-8000-000000000000")); }) == error_code::not_found);
}
