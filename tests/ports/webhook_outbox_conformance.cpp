// webhook_outbox: the completion-callback deliveries, their attempts and the retry
// schedule the dispatcher walks (due, next due, record, requeue).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/ports/store_impls.hpp"

using namespace agw::test;
using agw::core::webhook_delivery_record;

TEST_CASE_TEMPLATE("webhook_outbox: insert, find and list round-trip every field", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("t", 2));
  auto d = make_delivery("a", "s", 100);
  d.round_attempts = 2;
  d.created_at_ms = 42;
  store->insert_webhook_delivery(d);
  auto unscheduled = make_delivery("u", "s", 0);
  unscheduled.status = "failed";
  unscheduled.next_attempt_at_ms.reset();
  unscheduled.created_at_ms = 43;
  store->insert_webhook_delivery(unscheduled);

  const auto found = store->find_webhook_delivery("s", "a");
  REQUIRE(found);
  CHECK(found->id == "a");
  CHECK(found->webhook_id == "msg_a");
  CHECK(found->session_id == "s");
  CHECK(found->run_id == "run-a");
  CHECK(found->url == "http://127.0.0.1:9/a");
  CHECK(found->payload == R"({"id":"a"})");
  CHECK(found->status == "pending");
  CHECK(found->round_attempts == 2);
  CHECK(found->next_attempt_at_ms == 100);
  CHECK(found->created_at_ms == 42);
  CHECK(found->attempts.empty());
  const auto u = store->find_webhook_delivery("s", "u");
  REQUIRE(u);
  CHECK(u->status == "failed");
  CHECK_FALSE(u->next_attempt_at_ms);

  CHECK_FALSE(store->find_webhook_delivery("t", "a"));  // by session and id
  CHECK_FALSE(store->find_webhook_delivery("s", "missing"));
  CHECK(ids_of(store->list_webhook_deliveries("s")) == std::vector<std::string>{"a", "u"});
  CHECK(store->list_webhook_deliveries("t").empty());
  CHECK(store->list_webhook_deliveries("nope").empty());
}

TEST_CASE_TEMPLATE("webhook_outbox: duplicate ids, webhook ids and unknown sessions are refused", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_webhook_delivery(make_delivery("a", "s", 100));
  auto same_id = make_delivery("a", "s", 200);
  same_id.webhook_id = "msg_other";
  auto same_webhook_id = make_delivery("b", "s", 200);
  same_webhook_id.webhook_id = "msg_a";
  struct row {
    const char* name;
    webhook_delivery_record delivery;
  };
  for (const auto& r : {row{"same id", same_id}, row{"same webhook id", same_webhook_id},
                        row{"unknown session", make_delivery("c", "nope", 100)}}) {
    CAPTURE(r.name);
    CHECK(throws_store_error([&] { store->insert_webhook_delivery(r.delivery); }));
  }
  CHECK(ids_of(store->list_webhook_deliveries("s")) == std::vector<std::string>{"a"});
  CHECK(store->find_webhook_delivery("s", "a")->next_attempt_at_ms == 100);
  CHECK(store->list_webhook_deliveries("nope").empty());
}

TEST_CASE_TEMPLATE("webhook_outbox: list is oldest first, with every attempt", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  // Inserted out of creation order.
  store->insert_webhook_delivery(make_delivery("c", "s", 300));
  store->insert_webhook_delivery(make_delivery("a", "s", 100));
  store->insert_webhook_delivery(make_delivery("b", "s", 200));
  CHECK(store->record_webhook_attempt(make_outcome("a", 100, 500, "pending", 150)));
  CHECK(store->record_webhook_attempt(make_outcome("a", 150, std::nullopt, "pending", 250)));
  CHECK(store->record_webhook_attempt(make_outcome("a", 250, 410, "failed", std::nullopt)));
  const auto list = store->list_webhook_deliveries("s");
  CHECK(ids_of(list) == std::vector<std::string>{"a", "b", "c"});
  REQUIRE(list.size() == 3);
  const auto& a = list[0];
  CHECK(a.status == "failed");
  CHECK(a.round_attempts == 3);
  CHECK_FALSE(a.next_attempt_at_ms);
  REQUIRE(a.attempts.size() == 3);
  CHECK(a.attempts[0].attempt == 1);
  CHECK(a.attempts[0].at_ms == 100);
  CHECK(a.attempts[0].status_code == 500);
  CHECK_FALSE(a.attempts[0].error);
  CHECK(a.attempts[0].duration_ms == 3);
  CHECK(a.attempts[1].attempt == 2);
  CHECK_FALSE(a.attempts[1].status_code);
  CHECK(a.attempts[1].error == "connect: Connection refused");
  CHECK(a.attempts[2].attempt == 3);
  CHECK(a.attempts[2].status_code == 410);
  CHECK(a.attempts[2].at_ms == 250);
  CHECK(list[1].attempts.empty());
  // find answers the delivery without its attempts (the list shows them).
  CHECK(store->find_webhook_delivery("s", "a")->attempts.empty());
}

TEST_CASE_TEMPLATE("webhook_outbox: due deliveries are pending ones, earliest first, at most limit", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("t", 2));
  // Inserted neither in due order nor in id order, over two sessions.
  store->insert_webhook_delivery(make_delivery("b", "s", 200));
  store->insert_webhook_delivery(make_delivery("d", "t", 400));
  store->insert_webhook_delivery(make_delivery("a", "t", 100));
  store->insert_webhook_delivery(make_delivery("c", "s", 300));
  auto done = make_delivery("x", "s", 50);
  done.status = "delivered";
  store->insert_webhook_delivery(done);
  auto gave_up = make_delivery("y", "s", 60);
  gave_up.status = "failed";
  store->insert_webhook_delivery(gave_up);
  CHECK(store->record_webhook_attempt(make_outcome("a", 100, 500, "pending", 350)));  // rescheduled after c

  struct row {
    std::int64_t now;
    std::size_t limit;
    std::vector<std::string> expected;
  };
  const row rows[] = {
      {0, 10, {}},
      {199, 10, {}},
      {200, 10, {"b"}},
      {300, 10, {"b", "c"}},
      {350, 10, {"b", "c", "a"}},
      {1000, 10, {"b", "c", "a", "d"}},
      {1000, 2, {"b", "c"}},
      {1000, 0, {}},
  };
  for (const auto& r : rows) {
    CAPTURE(r.now);
    CAPTURE(r.limit);
    const auto due = store->claim_due_webhook_deliveries(r.now, 0, r.limit);
    CHECK(ids_of(due) == r.expected);
    for (const auto& d : due) CHECK(d.attempts.empty());  // without attempts
  }
  const auto due = store->claim_due_webhook_deliveries(1000, 0, 1);
  REQUIRE(due.size() == 1);
  CHECK(due[0].payload == R"({"id":"b"})");
  CHECK(due[0].url == "http://127.0.0.1:9/b");
  CHECK(due[0].webhook_id == "msg_b");
}

TEST_CASE_TEMPLATE("webhook_outbox: next_webhook_due_ms is the earliest pending schedule after a time", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  CHECK_FALSE(store->next_webhook_due_ms(0));
  store->insert_webhook_delivery(make_delivery("b", "s", 200));
  store->insert_webhook_delivery(make_delivery("a", "s", 100));
  store->insert_webhook_delivery(make_delivery("c", "s", 300));
  auto done = make_delivery("x", "s", 150);
  done.status = "delivered";
  store->insert_webhook_delivery(done);
  struct row {
    std::int64_t after;
    std::optional<std::int64_t> expected;
  };
  for (const auto& r : {row{0, 100}, row{99, 100}, row{100, 200}, row{150, 200}, row{250, 300}, row{300, std::nullopt}}) {
    CAPTURE(r.after);
    CHECK(store->next_webhook_due_ms(r.after) == r.expected);
  }
  CHECK(store->record_webhook_attempt(make_outcome("a", 100, 200, "delivered", std::nullopt)));
  CHECK(store->next_webhook_due_ms(0) == 200);
}

TEST_CASE_TEMPLATE("webhook_outbox: record_webhook_attempt moves status and schedule; finished deliveries take none", impl,
                   AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_webhook_delivery(make_delivery("a", "s", 100));
  store->insert_webhook_delivery(make_delivery("b", "s", 100));
  struct row {
    const char* name;
    agw::core::webhook_attempt_outcome outcome;
    bool recorded;
    const char* status;
    std::int64_t round_attempts;
    std::optional<std::int64_t> next;
  };
  const row rows[] = {
      {"a failure retries later", make_outcome("a", 100, 503, "pending", 160), true, "pending", 1, 160},
      {"an error retries later", make_outcome("a", 160, std::nullopt, "pending", 400), true, "pending", 2, 400},
      {"a success finishes it", make_outcome("a", 400, 204, "delivered", std::nullopt), true, "delivered", 3, std::nullopt},
      {"a late duplicate is refused", make_outcome("a", 410, 204, "delivered", std::nullopt), false, "delivered", 3,
       std::nullopt},
  };
  for (const auto& r : rows) {
    CAPTURE(r.name);
    CHECK(store->record_webhook_attempt(r.outcome) == r.recorded);
    const auto d = store->find_webhook_delivery("s", "a");
    REQUIRE(d);
    CHECK(d->status == r.status);
    CHECK(d->round_attempts == r.round_attempts);
    CHECK(d->next_attempt_at_ms == r.next);
  }
  CHECK(store->list_webhook_deliveries("s")[0].attempts.size() == 3);
  CHECK(store->find_webhook_delivery("s", "b")->round_attempts == 0);  // per delivery

  CHECK(store->record_webhook_attempt(make_outcome("b", 100, 410, "failed", std::nullopt)));
  CHECK_FALSE(store->record_webhook_attempt(make_outcome("b", 110, 200, "delivered", std::nullopt)));
  CHECK(store->find_webhook_delivery("s", "b")->status == "failed");
  CHECK_FALSE(store->record_webhook_attempt(make_outcome("missing", 120, 200, "delivered", std::nullopt)));
  CHECK(store->claim_due_webhook_deliveries(10'000, 0, 10).empty());
}

TEST_CASE_TEMPLATE("webhook_outbox: requeue starts a fresh round; attempt numbers go on", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_webhook_delivery(make_delivery("a", "s", 100));
  CHECK(store->record_webhook_attempt(make_outcome("a", 100, 500, "pending", 150)));
  CHECK(store->record_webhook_attempt(make_outcome("a", 150, 410, "failed", std::nullopt)));

  CHECK(store->requeue_webhook_delivery("a", 400));
  CHECK_FALSE(store->requeue_webhook_delivery("missing", 400));
  const auto again = store->find_webhook_delivery("s", "a");
  REQUIRE(again);
  CHECK(again->status == "pending");
  CHECK(again->round_attempts == 0);
  CHECK(again->next_attempt_at_ms == 400);
  CHECK(again->webhook_id == "msg_a");  // the same message to the receiver
  CHECK(ids_of(store->claim_due_webhook_deliveries(400, 0, 10)) == std::vector<std::string>{"a"});
  CHECK(store->next_webhook_due_ms(0) == 400);

  CHECK(store->record_webhook_attempt(make_outcome("a", 400, 204, "delivered", std::nullopt)));
  const auto after = store->list_webhook_deliveries("s").at(0);
  REQUIRE(after.attempts.size() == 3);
  CHECK(after.attempts[2].attempt == 3);  // numbered over the delivery's whole life
  CHECK(after.round_attempts == 1);

  // A delivered one can be requeued too (redeliver on request), and a pending one again.
  CHECK(store->requeue_webhook_delivery("a", 500));
  CHECK(store->requeue_webhook_delivery("a", 600));
  CHECK(store->find_webhook_delivery("s", "a")->next_attempt_at_ms == 600);
}

TEST_CASE_TEMPLATE("webhook_outbox: a deleted session's deliveries are gone and take no attempts", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("t", 2));
  store->insert_webhook_delivery(make_delivery("a", "s", 100));
  store->insert_webhook_delivery(make_delivery("b", "t", 100));
  CHECK(store->record_webhook_attempt(make_outcome("a", 100, 500, "pending", 150)));
  CHECK(store->delete_session("s"));
  CHECK(store->list_webhook_deliveries("s").empty());
  CHECK_FALSE(store->find_webhook_delivery("s", "a"));
  CHECK(ids_of(store->claim_due_webhook_deliveries(1000, 0, 10)) == std::vector<std::string>{"b"});
  CHECK(store->next_webhook_due_ms(120) == std::nullopt);  // a's schedule went with it
  CHECK_FALSE(store->record_webhook_attempt(make_outcome("a", 160, 200, "delivered", std::nullopt)));
  CHECK_FALSE(store->requeue_webhook_delivery("a", 200));
  // The ids are free again.
  store->insert_session(make_session("s", 3));
  CHECK_NOTHROW(store->insert_webhook_delivery(make_delivery("a", "s", 100)));
  CHECK(store->list_webhook_deliveries("s").at(0).attempts.empty());
}

// --- claims (docs/scale-out.md, "Webhooks"): each attempt made by one node ---

TEST_CASE_TEMPLATE("webhook_outbox: a claimed delivery is not handed out again before its claim ends; after, it is", impl,
                   AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  auto other = store_impl.open();  // another connection (another node, on PostgreSQL)
  store->insert_session(make_session("s", 1));
  store->insert_webhook_delivery(make_delivery("a", "s", 100));
  store->insert_webhook_delivery(make_delivery("b", "s", 200));
  store->insert_session_notice(make_delivery("n", "gone", 150));  // a notice is claimed like a delivery

  CHECK(ids_of(store->claim_due_webhook_deliveries(300, 1300, 10)) == std::vector<std::string>{"a", "n", "b"});
  // Claimed until 1300: neither this connection nor another gets them before that.
  CHECK(store->claim_due_webhook_deliveries(300, 1300, 10).empty());
  CHECK(other->claim_due_webhook_deliveries(1299, 2299, 10).empty());
  // Nothing falls due before the claims end: a node waits for that, it does not spin.
  CHECK(other->next_webhook_due_ms(300) == 1300);
  CHECK(other->next_webhook_due_ms(1300) == std::nullopt);
  // At the claim's end (the node that took them died): handed out again, earliest first.
  CHECK(ids_of(other->claim_due_webhook_deliveries(1300, 2300, 1)) == std::vector<std::string>{"a"});
  CHECK(ids_of(store->claim_due_webhook_deliveries(1300, 2400, 10)) == std::vector<std::string>{"n", "b"});
  CHECK(store->claim_due_webhook_deliveries(2299, 3000, 10).empty());
  CHECK(ids_of(store->claim_due_webhook_deliveries(2300, 3300, 10)) == std::vector<std::string>{"a"});
  CHECK(store->next_webhook_due_ms(2300) == 2400);
  // A claim does not change what the delivery is.
  const auto a = store->find_webhook_delivery("s", "a");
  REQUIRE(a);
  CHECK(a->status == "pending");
  CHECK(a->round_attempts == 0);
  CHECK(a->next_attempt_at_ms == 100);
}

TEST_CASE_TEMPLATE("webhook_outbox: recording an attempt releases the claim; a requeue or a start-up release does too", impl,
                   AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  auto other = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_webhook_delivery(make_delivery("a", "s", 100));
  store->insert_webhook_delivery(make_delivery("b", "s", 100));
  store->insert_session_notice(make_delivery("n", "gone", 100));
  REQUIRE(store->claim_due_webhook_deliveries(100, 50'000, 10).size() == 3);
  CHECK(other->next_webhook_due_ms(100) == 50'000);

  // A failed attempt: due again at its retry, whichever node looks (the claim is gone).
  CHECK(store->record_webhook_attempt(make_outcome("a", 110, 500, "pending", 160)));
  CHECK(store->record_webhook_attempt(make_outcome("n", 110, 500, "pending", 170)));
  CHECK(other->next_webhook_due_ms(100) == 160);
  CHECK(other->claim_due_webhook_deliveries(159, 60'000, 10).empty());
  CHECK(ids_of(other->claim_due_webhook_deliveries(170, 60'000, 10)) == std::vector<std::string>{"a", "n"});
  // A delivered one is not pending: no claim, nothing due.
  CHECK(other->record_webhook_attempt(make_outcome("a", 180, 200, "delivered", std::nullopt)));
  CHECK(store->find_webhook_delivery("s", "a")->attempts.empty());
  CHECK(store->list_webhook_deliveries("s").at(0).attempts.size() == 2);
  // A redelivery on request is due at once, unclaimed.
  CHECK(store->requeue_webhook_delivery("a", 200));
  CHECK(ids_of(store->claim_due_webhook_deliveries(200, 70'000, 10)) == std::vector<std::string>{"a"});
  // b and n are still claimed (by two connections); the start-up release frees every claim.
  CHECK(store->claim_due_webhook_deliveries(300, 80'000, 10).empty());
  store->release_webhook_claims();
  CHECK(ids_of(other->claim_due_webhook_deliveries(300, 80'000, 10)) == std::vector<std::string>{"b", "n", "a"});
}

TEST_CASE_TEMPLATE("webhook_outbox: while a session's earlier event batch is claimed, its later ones wait", impl,
                   AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  auto first = make_delivery("e1", "s", 100);
  first.event_first_id = 1;
  auto second = make_delivery("e2", "s", 100);
  second.event_first_id = 5;
  store->insert_webhook_delivery(first);
  store->insert_webhook_delivery(second);
  CHECK(ids_of(store->claim_due_webhook_deliveries(100, 1000, 10)) == std::vector<std::string>{"e1"});
  // e1 is in flight (claimed): e2 must not overtake it on another node.
  CHECK(store->claim_due_webhook_deliveries(200, 1200, 10).empty());
  CHECK(store->record_webhook_attempt(make_outcome("e1", 210, 204, "delivered", std::nullopt)));
  CHECK(ids_of(store->claim_due_webhook_deliveries(220, 1220, 10)) == std::vector<std::string>{"e2"});
}

TEST_CASE_TEMPLATE("sweep_lock: try_lead answers inside a write batch", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->begin_batch();
  CHECK(store->try_lead("session-ttl-sweep"));
  CHECK(store->try_lead("session-ttl-sweep"));  // the holder asking again
  store->commit_batch();
  store->begin_batch();
  CHECK(store->try_lead("session-ttl-sweep"));  // released with the commit
  store->rollback_batch();
}
