// message_queue: messages queued while a run was live (multitask enqueue), per
// session, taken by the next run in arrival order; the session's delete takes them.
#include <doctest/doctest.h>

#include <string>

#include "tests/ports/store_impls.hpp"

using namespace agw::test;

namespace {

agw::core::queued_message_record queued(const std::string& session, const std::string& id, std::int64_t at_ms) {
  return {id, session, "content of " + id, "customer", at_ms, 0};
}

}  // namespace

TEST_CASE_TEMPLATE("message_queue: taken in arrival order, per session, once", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("s2", 2));
  // Arrival order, not id or time order.
  const auto first = store->enqueue_message(queued("s", "m-c", 30));
  const auto other = store->enqueue_message(queued("s2", "m-x", 5));
  const auto second = store->enqueue_message(queued("s", "m-a", 10));
  const auto third = store->enqueue_message(queued("s", "m-b", 20));
  CHECK(first < other);  // seqs increase across sessions
  CHECK(other < second);
  CHECK(second < third);
  CHECK(store->queued_message_count("s") == 3);
  CHECK(store->queued_message_count("s2") == 1);

  const auto taken = store->take_queued_messages("s");
  REQUIRE(taken.size() == 3);
  CHECK(taken[0].id == "m-c");
  CHECK(taken[1].id == "m-a");
  CHECK(taken[2].id == "m-b");
  CHECK(taken[0].session_id == "s");
  CHECK(taken[0].content == "content of m-c");
  CHECK(taken[0].source == "customer");
  CHECK(taken[0].created_at_ms == 30);
  CHECK(taken[0].seq == first);
  CHECK(taken[2].seq == third);
  CHECK(store->take_queued_messages("s").empty());
  CHECK(store->queued_message_count("s") == 0);
  CHECK(store->queued_message_count("s2") == 1);  // the other session's stays
}

TEST_CASE_TEMPLATE("message_queue: refused for an unknown session or a repeated id; the delete takes them", impl,
                   AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  CHECK_THROWS_AS(store->enqueue_message(queued("nope", "m-1", 1)), agw::core::store_error);
  store->enqueue_message(queued("s", "m-1", 1));
  CHECK_THROWS_AS(store->enqueue_message(queued("s", "m-1", 2)), agw::core::store_error);
  CHECK(store->queued_message_count("s") == 1);
  CHECK(store->delete_session("s"));
  CHECK(store->queued_message_count("s") == 0);
  CHECK(store->take_queued_messages("s").empty());
}
