#include "core/services/session_service.hpp"

#include <doctest/doctest.h>

#include "core/ids.hpp"
#include "tests/core/services/services_fixture.hpp"

namespace {

using agw::core::error_code;
using agw::test::error_of;
using agw::test::services_fixture;

int calls_named(const agw::test::fake_db& db, const std::string& name) {
  int n = 0;
  for (const auto& c : db.calls()) n += c.ends_with(":" + name);
  return n;
}

}  // namespace

TEST_CASE("session_service: create assigns ids and times and stores the session") {
  services_fixture f;
  auto created = f.create(R"({"title": "hello", "metadata": {"team": "a"}})");
  CHECK(agw::core::is_uuid(created.session.id));
  CHECK(agw::core::is_uuid(created.session.thread_id));
  CHECK(created.session.id != created.session.thread_id);
  CHECK(created.session.title == "hello");
  CHECK(created.session.status == "active");
  CHECK(created.session.created_at_ms > 0);
  CHECK(created.session.updated_at_ms == created.session.created_at_ms);
  CHECK_FALSE(created.run);
  auto stored = f.db.committed().sessions;
  REQUIRE(stored.count(created.session.id) == 1);
  CHECK(stored.at(created.session.id).metadata.at("team") == "a");
}

TEST_CASE("session_service: a bad create body stores nothing") {
  services_fixture f;
  CHECK(error_of([&] { f.create(R"({"title": 5})"); }) == error_code::bad_request);
  CHECK(f.db.committed().sessions.empty());
}

TEST_CASE("session_service: get returns the stored session; unknown and malformed ids are not_found") {
  services_fixture f;
  auto created = f.create(R"({"title": "t"})");
  auto got = f.await(f.sessions.get(created.session.id));
  CHECK(got.session.id == created.session.id);
  CHECK(got.session.title == "t");
  CHECK(got.session.last_event_id == 0);
  CHECK_FALSE(got.run);

  CHECK(error_of([&] { f.await(f.sessions.get(agw::core::new_uuid())); }) == error_code::not_found);
  const int reads = calls_named(f.db, "find_session");
  // An id that is not a UUID cannot exist: it never reaches storage.
  CHECK(error_of([&] { f.await(f.sessions.get("not-a-uuid")); }) == error_code::not_found);
  CHECK(calls_named(f.db, "find_session") == reads);
  CHECK(error_of([] { agw::core::session_service::check_id("nope"); }) == error_code::not_found);
}

TEST_CASE("session_service: patch replaces the given fields and keeps the others") {
  services_fixture f;
  auto created = f.create(R"({"title": "old", "metadata": {"k": "v"}})");
  auto patched = f.await(f.sessions.patch(created.session.id, boost::json::parse(R"({"title": "new", "status": "inactive"})")));
  CHECK(patched.session.title == "new");
  CHECK(patched.session.status == "inactive");
  CHECK(patched.session.metadata.at("k") == "v");
  CHECK(patched.session.updated_at_ms >= created.session.updated_at_ms);
  auto stored = f.db.committed().sessions.at(created.session.id);
  CHECK(stored.title == "new");
  CHECK(stored.status == "inactive");
}

TEST_CASE("session_service: a bad patch changes nothing; patching an unknown session is not_found") {
  services_fixture f;
  auto created = f.create(R"({"title": "old"})");
  const int writes = f.db.savepoints.load();
  CHECK(error_of([&] { f.await(f.sessions.patch(created.session.id, boost::json::parse(R"({"status": "bogus"})"))); }) ==
        error_code::bad_request);
  CHECK(f.db.savepoints.load() == writes);  // validated before any write job
  CHECK(f.db.committed().sessions.at(created.session.id).title == "old");
  CHECK(error_of([&] { f.await(f.sessions.patch(agw::core::new_uuid(), boost::json::parse(R"({"title": "x"})"))); }) ==
        error_code::not_found);
}

TEST_CASE("session_service: remove deletes the session; a second remove is not_found") {
  services_fixture f;
  auto created = f.create();
  f.await(f.sessions.remove(created.session.id));
  CHECK(f.db.committed().sessions.empty());
  CHECK(error_of([&] { f.await(f.sessions.get(created.session.id)); }) == error_code::not_found);
  CHECK(error_of([&] { f.await(f.sessions.remove(created.session.id)); }) == error_code::not_found);
  CHECK(error_of([&] { f.await(f.sessions.remove("x")); }) == error_code::not_found);
}

TEST_CASE("session_service: list pages newest first with the total") {
  services_fixture f;
  for (int i = 0; i < 3; ++i) f.create(R"({"metadata": {"n": ")" + std::to_string(i) + R"("}})");
  agw::core::session_filter filter;
  filter.limit = 2;
  auto page = f.await(f.sessions.list(filter));
  CHECK(page.total == 3);
  CHECK(page.sessions.size() == 2);
  filter.metadata.emplace_back("n", "1");
  filter.limit = 50;
  auto one = f.await(f.sessions.list(filter));
  CHECK(one.total == 1);
  REQUIRE(one.sessions.size() == 1);
  CHECK(one.sessions[0].session.metadata.at("n") == "1");
}
