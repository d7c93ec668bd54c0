// The webhook outbox in a real SQLite file: insert, due order, attempts, requeue, cascade.
#include <doctest/doctest.h>

#include "core/webhooks/webhook_delivery.hpp"
#include "persistence/sqlite_store.hpp"
#include "tests/persistence/sqlite_fixture.hpp"

namespace {

using namespace agw::core;
using agw::test::make_session;
using agw::test::temp_db;

webhook_delivery_record delivery(const std::string& id, const std::string& session_id, std::int64_t due_ms) {
  webhook_delivery_record d;
  d.id = id;
  d.webhook_id = "msg_" + id;
  d.session_id = session_id;
  d.run_id = "run-" + id;
  d.url = "http://127.0.0.1:9/" + id;
  d.payload = R"({"id":")" + id + R"("})";
  d.next_attempt_at_ms = due_ms;
  d.created_at_ms = due_ms;
  return d;
}

webhook_attempt_outcome outcome(const std::string& id, std::int64_t at, std::optional<int> code, std::string status,
                                std::optional<std::int64_t> next) {
  webhook_attempt_outcome o;
  o.delivery_id = id;
  o.attempt.at_ms = at;
  o.attempt.status_code = code;
  if (!code) o.attempt.error = "connect: Connection refused";
  o.attempt.duration_ms = 3;
  o.status = std::move(status);
  o.next_attempt_at_ms = next;
  return o;
}

}  // namespace

TEST_CASE("sqlite_store webhooks: due deliveries come earliest first, only pending ones") {
  temp_db db;
  auto store = db.open();
  store->insert_session(make_session("s", 1));
  store->insert_webhook_delivery(delivery("b", "s", 200));
  store->insert_webhook_delivery(delivery("a", "s", 100));
  store->insert_webhook_delivery(delivery("c", "s", 300));
  auto due = store->claim_due_webhook_deliveries(250, 0, 10);
  REQUIRE(due.size() == 2);
  CHECK(due[0].id == "a");
  CHECK(due[1].id == "b");
  CHECK(due[0].payload == R"({"id":"a"})");
  CHECK(store->claim_due_webhook_deliveries(250, 0, 1).size() == 1);
  CHECK(store->next_webhook_due_ms(250) == 300);
  CHECK(store->next_webhook_due_ms(0) == 100);
  CHECK_FALSE(store->next_webhook_due_ms(300));

  CHECK(store->record_webhook_attempt(outcome("a", 110, 200, "delivered", std::nullopt)));
  CHECK(store->claim_due_webhook_deliveries(250, 0, 10).size() == 1);
  // A finished delivery takes no more attempts (a late duplicate recording is refused).
  CHECK_FALSE(store->record_webhook_attempt(outcome("a", 120, 200, "delivered", std::nullopt)));
  CHECK_FALSE(store->record_webhook_attempt(outcome("missing", 120, 200, "delivered", std::nullopt)));
}

TEST_CASE("sqlite_store webhooks: attempts are listed in order and requeue starts a fresh round") {
  temp_db db;
  auto store = db.open();
  store->insert_session(make_session("s", 1));
  store->insert_webhook_delivery(delivery("a", "s", 100));
  CHECK(store->record_webhook_attempt(outcome("a", 100, 500, "pending", 150)));
  CHECK(store->record_webhook_attempt(outcome("a", 150, std::nullopt, "pending", 250)));
  CHECK(store->record_webhook_attempt(outcome("a", 250, 410, "failed", std::nullopt)));
  auto list = store->list_webhook_deliveries("s");
  REQUIRE(list.size() == 1);
  auto d = list[0];
  CHECK(d.status == "failed");
  CHECK(d.round_attempts == 3);
  CHECK_FALSE(d.next_attempt_at_ms);
  REQUIRE(d.attempts.size() == 3);
  CHECK(d.attempts[0].attempt == 1);
  CHECK(d.attempts[0].status_code == 500);
  CHECK_FALSE(d.attempts[0].error);
  CHECK(d.attempts[1].attempt == 2);
  CHECK_FALSE(d.attempts[1].status_code);
  CHECK(d.attempts[1].error == "connect: Connection refused");
  CHECK(d.attempts[2].status_code == 410);
  CHECK(d.attempts[2].at_ms == 250);

  CHECK(store->requeue_webhook_delivery("a", 400));
  CHECK_FALSE(store->requeue_webhook_delivery("missing", 400));
  auto again = store->find_webhook_delivery("s", "a");
  REQUIRE(again);
  CHECK(again->status == "pending");
  CHECK(again->round_attempts == 0);
  CHECK(again->next_attempt_at_ms == 400);
  CHECK(again->webhook_id == "msg_a");
  CHECK(store->record_webhook_attempt(outcome("a", 400, 204, "delivered", std::nullopt)));
  auto after = store->list_webhook_deliveries("s")[0];
  REQUIRE(after.attempts.size() == 4);
  CHECK(after.attempts[3].attempt == 4);  // attempt numbers go on across rounds
  CHECK(after.round_attempts == 1);
  CHECK_FALSE(store->find_webhook_delivery("other", "a"));
}

TEST_CASE("sqlite_store webhooks: deleting the session deletes its deliveries and attempts") {
  temp_db db;
  auto store = db.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("t", 2));
  store->insert_webhook_delivery(delivery("a", "s", 100));
  store->insert_webhook_delivery(delivery("b", "t", 100));
  CHECK(store->record_webhook_attempt(outcome("a", 100, 500, "pending", 150)));
  CHECK(store->delete_session("s"));
  CHECK(store->list_webhook_deliveries("s").empty());
  CHECK(store->claim_due_webhook_deliveries(1000, 0, 10).size() == 1);
  CHECK_FALSE(store->record_webhook_attempt(outcome("a", 160, 200, "delivered", std::nullopt)));
}
