// store_connection as a unit of work: what several ports write in one job commits
// or rolls back together. The store_executor wraps every write job in a savepoint
// inside one batch transaction (group commit) and relies on exactly this.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/ports/store_impls.hpp"

using namespace agw::test;

namespace {

// One job of the run pipeline that writes to every port at once.
void write_everywhere(agw::core::store_connection& store, const std::string& session) {
  store.upsert_message(make_message(session, session + "-m1", 1));
  store.insert_checkpoint({"thread-" + session, session, 1, R"({"v":1})", 10});
  store.append_events(make_batch(session, 1, 3));
  store.insert_idempotency_key({session, "key", "hash", "run", 0, 1});
  store.insert_webhook_delivery(make_delivery("d-" + session, session, 100));
}

// What write_everywhere left for `session`, port by port: every entry true or every false.
std::vector<bool> held_everywhere(agw::core::store_connection& store, const std::string& session) {
  return {
      store.all_messages(session).size() == 1,
      store.latest_checkpoint("thread-" + session).has_value(),
      store.events_after(session, 0, 100).size() == 3,
      store.find_idempotency_key(session, "key").has_value(),
      store.find_webhook_delivery(session, "d-" + session).has_value(),
  };
}

const std::vector<bool> all_held(5, true);
const std::vector<bool> none_held(5, false);

}  // namespace

TEST_CASE_TEMPLATE("unit_of_work: a savepoint rolled back undoes the writes of every port at once", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("t", 2));
  store->begin_batch();
  CHECK(store->batch_open());
  store->savepoint();
  write_everywhere(*store, "s");
  store->release_savepoint();
  store->savepoint();
  write_everywhere(*store, "t");
  auto s = *store->find_session("s");
  s.title = "renamed";
  CHECK(store->update_session(s));
  CHECK(held_everywhere(*store, "t") == all_held);  // the job sees its own writes
  store->rollback_to_savepoint();
  store->release_savepoint();
  CHECK(held_everywhere(*store, "t") == none_held);
  CHECK_FALSE(store->find_session("s")->title);
  CHECK(held_everywhere(*store, "s") == all_held);  // the earlier job is untouched
  store->commit_batch();
  CHECK_FALSE(store->batch_open());
  CHECK(held_everywhere(*store, "s") == all_held);
  CHECK(held_everywhere(*store, "t") == none_held);
  CHECK(store->find_session("t")->last_event_id == 0);
}

TEST_CASE_TEMPLATE("unit_of_work: a committed batch is visible to another connection, an open one is not", impl,
                   AGW_STORE_IMPLS) {
  impl store_impl;
  auto writer = store_impl.open();
  auto reader = store_impl.open();
  writer->begin_batch();
  writer->savepoint();
  writer->insert_session(make_session("s", 1));
  write_everywhere(*writer, "s");
  writer->release_savepoint();
  // The reader is not blocked by the open batch and sees the state before it.
  CHECK_FALSE(reader->find_session("s"));
  CHECK(held_everywhere(*reader, "s") == none_held);
  CHECK(reader->list_sessions({}).total == 0);
  writer->commit_batch();
  const auto found = reader->find_session("s");
  REQUIRE(found);
  CHECK(found->last_event_id == 3);
  CHECK(found->message_count == 1);
  CHECK(held_everywhere(*reader, "s") == all_held);
  CHECK(ids_of(reader->events_after("s", 0, 100)) == id_range(1, 3));

  // And the other way round, autocommit outside a batch.
  reader->upsert_message(make_message("s", "s-m2", 2));
  CHECK(writer->find_session("s")->message_count == 2);
}

TEST_CASE_TEMPLATE("unit_of_work: a rolled-back batch is visible to no connection", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto writer = store_impl.open();
  auto reader = store_impl.open();
  writer->insert_session(make_session("s", 1));
  writer->begin_batch();
  writer->savepoint();
  writer->insert_session(make_session("t", 2));
  write_everywhere(*writer, "s");
  CHECK(writer->delete_session("s") == true);
  writer->release_savepoint();
  writer->rollback_batch();
  CHECK_FALSE(writer->batch_open());
  for (auto* connection : {writer.get(), reader.get()}) {
    CHECK(connection->all_session_ids() == std::vector<std::string>{"s"});
    CHECK(held_everywhere(*connection, "s") == none_held);
    CHECK(connection->find_session("s")->last_event_id == 0);
  }
  CHECK_NOTHROW(writer->rollback_batch());  // none open: nothing to do
}

TEST_CASE_TEMPLATE("unit_of_work: a failed write inside a savepoint leaves the batch usable", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->begin_batch();
  store->savepoint();
  store->upsert_message(make_message("s", "m1", 1));
  CHECK(throws_store_error([&] { store->insert_session(make_session("s", 5)); }));
  store->rollback_to_savepoint();
  store->release_savepoint();
  CHECK(store->batch_open());
  store->savepoint();
  store->insert_session(make_session("after-error", 6));
  store->release_savepoint();
  store->commit_batch();
  CHECK(store->all_session_ids() == std::vector<std::string>{"s", "after-error"});
  CHECK(store->all_messages("s").empty());  // the failed job's earlier write went with it
}

// The run's end: its final checkpoint (with the messages projection) and the
// webhook outbox row are one job, so a callback is never queued for a conversation
// that was not saved, nor a saved one left without its callback.
TEST_CASE_TEMPLATE("unit_of_work: the final checkpoint and its outbox row commit together or not at all", impl, AGW_STORE_IMPLS) {
  for (const bool commit : {true, false}) {
    CAPTURE(commit);
    impl store_impl;
    auto writer = store_impl.open();
    auto reader = store_impl.open();
    writer->insert_session(make_session("s", 1));
    writer->insert_checkpoint({"thread-s", "s", 1, R"({"v":1})", 10});
    writer->begin_batch();
    writer->savepoint();
    writer->insert_checkpoint({"thread-s", "s", 2, R"({"v":2})", 20});
    writer->upsert_message(make_message("s", "m1", 1));
    writer->upsert_message(make_message("s", "m2", 2));
    writer->insert_webhook_delivery(make_delivery("d", "s", 20));
    writer->release_savepoint();
    // Neither is visible before the commit.
    CHECK(reader->latest_checkpoint("thread-s")->version == 1);
    CHECK(reader->claim_due_webhook_deliveries(1000, 0, 10).empty());
    if (commit)
      writer->commit_batch();
    else
      writer->rollback_batch();
    const std::int64_t version = commit ? 2 : 1;
    CHECK(reader->latest_checkpoint("thread-s")->version == version);
    CHECK(reader->all_messages("s").size() == (commit ? 2u : 0u));
    CHECK(ids_of(reader->claim_due_webhook_deliveries(1000, 0, 10)) ==
          (commit ? std::vector<std::string>{"d"} : std::vector<std::string>{}));
    CHECK(reader->next_webhook_due_ms(0) == (commit ? std::optional<std::int64_t>(20) : std::nullopt));
  }
}

TEST_CASE_TEMPLATE("unit_of_work: one batch carries many jobs to one commit", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto writer = store_impl.open();
  auto reader = store_impl.open();
  writer->begin_batch();
  for (int job = 0; job < 5; ++job) {
    writer->savepoint();
    const auto id = "s" + std::to_string(job);
    writer->insert_session(make_session(id, job));
    writer->append_events(make_batch(id, 1, 1 + job));
    if (job == 2) writer->rollback_to_savepoint();  // one job fails; the others still commit
    writer->release_savepoint();
  }
  CHECK(reader->all_session_ids().empty());
  writer->commit_batch();
  CHECK(reader->all_session_ids() == std::vector<std::string>{"s0", "s1", "s3", "s4"});
  CHECK(ids_of(reader->events_after("s4", 0, 100)) == id_range(1, 5));
  CHECK(reader->events_after("s2", 0, 100).empty());
}
