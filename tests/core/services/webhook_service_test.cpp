#include "core/services/webhook_service.hpp"

#include <doctest/doctest.h>

#include "core/time_format.hpp"
#include "core/webhooks/webhook_delivery.hpp"
#include "tests/core/services/services_fixture.hpp"
#include "tests/support/manual_clock.hpp"

namespace {

using agw::core::error_code;
using agw::core::webhook_delivery_record;
using agw::test::error_of;
using agw::test::services_fixture;

webhook_delivery_record delivery(const std::string& session_id, const std::string& id, const std::string& status) {
  webhook_delivery_record d;
  d.id = id;
  d.webhook_id = "msg_" + id;
  d.session_id = session_id;
  d.run_id = "run-1";
  d.url = "https://example.com/hook";
  d.payload = "{}";
  d.status = status;
  d.round_attempts = status == "pending" ? 0 : 3;
  if (status == "pending") d.next_attempt_at_ms = agw::core::now_ms() + 60'000;
  d.created_at_ms = agw::core::now_ms();
  return d;
}

}  // namespace

TEST_CASE("webhook_service: redelivering a pending delivery is delivery_pending and changes nothing") {
  services_fixture f;
  auto s = f.create();
  f.db.seed([&](agw::test::fake_data& d) { d.deliveries.push_back(delivery(s.session.id, "d1", "pending")); });
  CHECK(error_of([&] { f.await(f.deliveries.redeliver(s.session.id, "d1")); }) == error_code::delivery_pending);
  auto stored = f.db.committed().deliveries.at(0);
  CHECK(stored.status == "pending");
  CHECK(stored.next_attempt_at_ms > agw::core::now_ms());
}

TEST_CASE("webhook_service: redelivering a failed delivery queues it now with a fresh schedule") {
  services_fixture f;
  auto s = f.create();
  f.db.seed([&](agw::test::fake_data& d) { d.deliveries.push_back(delivery(s.session.id, "d2", "failed")); });
  const auto before = agw::core::now_ms();
  auto requeued = f.await(f.deliveries.redeliver(s.session.id, "d2"));
  CHECK(requeued.id == "d2");
  CHECK(requeued.status == "pending");
  CHECK(requeued.round_attempts == 0);
  REQUIRE(requeued.next_attempt_at_ms);
  CHECK(*requeued.next_attempt_at_ms >= before);
  CHECK(f.db.committed().deliveries.at(0).status == "pending");
}

TEST_CASE("webhook_service: unknown sessions and deliveries are not_found") {
  services_fixture f;
  auto s = f.create();
  auto other = f.create();
  f.db.seed([&](agw::test::fake_data& d) { d.deliveries.push_back(delivery(other.session.id, "d3", "failed")); });
  CHECK(error_of([&] { f.await(f.deliveries.redeliver(s.session.id, "nope")); }) == error_code::not_found);
  // Another session's delivery is not found through this one.
  CHECK(error_of([&] { f.await(f.deliveries.redeliver(s.session.id, "d3")); }) == error_code::not_found);
  CHECK(error_of([&] { f.await(f.deliveries.list("00000000-0000-4000-8000-000000000000")); }) == error_code::not_found);
}

TEST_CASE("webhook_service: list, due, next due and recording an attempt") {
  services_fixture f;
  auto s = f.create();
  const auto now = agw::core::now_ms();
  f.db.seed([&](agw::test::fake_data& d) {
    auto due_now = delivery(s.session.id, "a", "pending");
    due_now.next_attempt_at_ms = now - 10;
    d.deliveries.push_back(due_now);
    d.deliveries.push_back(delivery(s.session.id, "b", "pending"));  // due in a minute
  });
  CHECK(f.await(f.deliveries.list(s.session.id)).size() == 2);
  auto due = f.await(f.deliveries.claim_due(now, 10, 0));
  REQUIRE(due.size() == 1);
  CHECK(due[0].id == "a");
  auto next = f.await(f.deliveries.next_due_ms(now));
  REQUIRE(next);
  CHECK(*next > now);

  agw::core::webhook_attempt_outcome outcome{"a", {0, now, 200, std::nullopt, 5}, "delivered", std::nullopt};
  CHECK(f.await(f.deliveries.record_attempt(outcome)));
  auto listed = f.await(f.deliveries.list(s.session.id));
  CHECK(listed.at(0).status == "delivered");
  CHECK(listed.at(0).attempts.size() == 1);
  outcome.delivery_id = "gone";
  CHECK_FALSE(f.await(f.deliveries.record_attempt(outcome)));
}

TEST_CASE("webhook_service: on a manual clock, a redelivery is due at once and a retry when its time comes") {
  agw::test::manual_clock clock;
  services_fixture f(clock);
  auto s = f.create();
  f.db.seed([&](agw::test::fake_data& d) { d.deliveries.push_back(delivery(s.session.id, "d4", "failed")); });
  auto requeued = f.await(f.deliveries.redeliver(s.session.id, "d4"));
  REQUIRE(requeued.next_attempt_at_ms);
  CHECK(*requeued.next_attempt_at_ms == clock.wall_ms());
  CHECK(f.await(f.deliveries.claim_due(clock.wall_ms(), 10, 0)).size() == 1);

  // The first attempt fails with a 503: the schedule's first delay (±20 %) decides the next attempt.
  std::mt19937_64 rng(7);
  const std::vector<std::chrono::duration<double>> schedule{std::chrono::seconds(10), std::chrono::seconds(60)};
  agw::core::attempt_result failed;
  failed.status_code = 503;
  auto decision = agw::core::decide_after_attempt(failed, 1, schedule, clock.wall_ms(), rng);
  REQUIRE(decision.next_attempt_at_ms);
  const auto delay = *decision.next_attempt_at_ms - clock.wall_ms();
  CHECK(delay >= 8'000);
  CHECK(delay <= 12'000);
  agw::core::webhook_attempt_outcome outcome{
      "d4", {0, clock.wall_ms(), 503, std::nullopt, 5}, decision.status, decision.next_attempt_at_ms};
  CHECK(f.await(f.deliveries.record_attempt(outcome)));

  // Not due until the clock reaches it; then due, and nothing is due later.
  CHECK(f.await(f.deliveries.claim_due(clock.wall_ms(), 10, 0)).empty());
  CHECK(f.await(f.deliveries.next_due_ms(clock.wall_ms())) == decision.next_attempt_at_ms);
  clock.advance(std::chrono::milliseconds(delay - 1));
  CHECK(f.await(f.deliveries.claim_due(clock.wall_ms(), 10, 0)).empty());
  clock.advance(std::chrono::milliseconds(1));
  auto due = f.await(f.deliveries.claim_due(clock.wall_ms(), 10, 0));
  REQUIRE(due.size() == 1);
  CHECK(due[0].id == "d4");
}
