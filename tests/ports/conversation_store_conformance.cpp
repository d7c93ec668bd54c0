// conversation_store: versioned checkpoints per thread (the newest wins) and the
// messages projection the REST API pages through.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <string>
#include <vector>

#include "tests/ports/store_impls.hpp"

using namespace agw::test;

TEST_CASE_TEMPLATE("conversation_store: latest_checkpoint is the highest version of its thread", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("s2", 2));
  CHECK_FALSE(store->latest_checkpoint("thread-s"));
  // Written out of version order: the highest version wins, not the last written.
  store->insert_checkpoint({"thread-s", "s", 1, R"({"v":1})", 10});
  store->insert_checkpoint({"thread-s", "s", 3, R"({"v":3})", 30});
  store->insert_checkpoint({"thread-s", "s", 2, R"({"v":2})", 20});
  store->insert_checkpoint({"thread-s2", "s2", 9, R"({"v":9})", 90});
  const auto latest = store->latest_checkpoint("thread-s");
  REQUIRE(latest);
  CHECK(latest->thread_id == "thread-s");
  CHECK(latest->session_id == "s");
  CHECK(latest->version == 3);
  CHECK(latest->state == R"({"v":3})");
  CHECK(latest->created_at_ms == 30);
  CHECK(store->latest_checkpoint("thread-s2")->version == 9);  // per thread
  CHECK_FALSE(store->latest_checkpoint("thread-none"));
  CHECK_FALSE(store->latest_checkpoint("s"));  // by thread id, not session id

  store->insert_checkpoint({"thread-s", "s", 4, R"({"v":4})", 40});
  CHECK(store->latest_checkpoint("thread-s")->state == R"({"v":4})");
}

TEST_CASE_TEMPLATE("conversation_store: a checkpoint version is written once; unknown sessions are refused", impl,
                   AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_checkpoint({"thread-s", "s", 3, R"({"v":3})", 30});
  CHECK(throws_store_error([&] { store->insert_checkpoint({"thread-s", "s", 3, "{}", 31}); }));
  CHECK(store->latest_checkpoint("thread-s")->state == R"({"v":3})");
  CHECK(throws_store_error([&] { store->insert_checkpoint({"thread-x", "nope", 1, "{}", 0}); }));
  CHECK_FALSE(store->latest_checkpoint("thread-x"));
}

TEST_CASE_TEMPLATE("conversation_store: messages round-trip every field", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  auto with_calls = make_message("s", "m2", 2);
  with_calls.tool_calls = boost::json::parse(R"([{"id":"call_1","name":"calculator","args":{"expression":"1+1"}}])").as_array();
  with_calls.model_used = "mock";
  with_calls.token_count = 12;
  with_calls.parent_id = "m1";
  auto tool = make_message("s", "m3", 3);
  tool.role = "tool";
  tool.tool_call_id = "call_1";
  tool.status = "aborted";
  store->upsert_message(make_message("s", "m1", 1));
  store->upsert_message(with_calls);
  store->upsert_message(tool);

  const auto all = store->all_messages("s");
  REQUIRE(all.size() == 3);
  const auto& m2 = all[1];
  CHECK(m2.id == "m2");
  CHECK(m2.session_id == "s");
  CHECK(m2.seq == 2);
  CHECK(m2.role == "assistant");
  CHECK(m2.content == "content of m2");
  CHECK(m2.tool_calls == with_calls.tool_calls);
  CHECK(m2.model_used == "mock");
  CHECK(m2.token_count == 12);
  CHECK(m2.parent_id == "m1");
  CHECK_FALSE(m2.tool_call_id);
  CHECK(m2.status == "complete");
  CHECK(m2.created_at_ms == 1002);
  CHECK(all[2].role == "tool");
  CHECK(all[2].tool_call_id == "call_1");
  CHECK(all[2].status == "aborted");
  CHECK_FALSE(all[0].token_count);
  CHECK_FALSE(all[0].model_used);
  CHECK_FALSE(all[0].parent_id);
  CHECK(all[0].tool_calls.empty());
}

TEST_CASE_TEMPLATE("conversation_store: list_messages pages newest first; all_messages is oldest first", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("other", 2));
  // Inserted out of order, ids not in seq order: reads order by seq.
  for (auto [id, seq] : {std::pair{"b", 3}, std::pair{"c", 1}, std::pair{"a", 4}, std::pair{"d", 2}})
    store->upsert_message(make_message("s", id, seq));
  store->upsert_message(make_message("other", "o1", 1));

  CHECK(seqs_of(store->all_messages("s")) == std::vector<std::int64_t>{1, 2, 3, 4});
  struct row {
    std::int64_t limit, offset;
    std::vector<std::int64_t> expected;
  };
  const row rows[] = {{10, 0, {4, 3, 2, 1}}, {2, 0, {4, 3}}, {2, 1, {3, 2}}, {2, 2, {2, 1}},
                      {2, 3, {1}},           {2, 4, {}},     {0, 0, {}},     {1, 3, {1}}};
  for (const auto& r : rows) {
    CAPTURE(r.limit);
    CAPTURE(r.offset);
    const auto page = store->list_messages("s", r.limit, r.offset);
    CHECK(seqs_of(page.messages) == r.expected);
    CHECK(page.total == 4);
  }
  CHECK(store->list_messages("nope", 10, 0).total == 0);
  CHECK(store->list_messages("nope", 10, 0).messages.empty());
  CHECK(store->all_messages("nope").empty());
  CHECK(seqs_of(store->all_messages("other")) == std::vector<std::int64_t>{1});
}

TEST_CASE_TEMPLATE("conversation_store: upsert replaces a message by id; a taken position or unknown session is refused", impl,
                   AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  auto m3 = make_message("s", "m3", 3);
  m3.tool_call_id = "call_1";
  m3.token_count = 5;
  store->upsert_message(make_message("s", "m1", 1));
  store->upsert_message(m3);

  // The projection rewrites a message in place (a partial reply completed, interrupted...).
  auto edited = make_message("s", "m3", 3);
  edited.content = "partial";
  edited.status = "interrupted";
  store->upsert_message(edited);
  auto all = store->all_messages("s");
  REQUIRE(all.size() == 2);
  CHECK(all[1].content == "partial");
  CHECK(all[1].status == "interrupted");
  CHECK_FALSE(all[1].tool_call_id);  // every field is replaced, cleared ones too
  CHECK_FALSE(all[1].token_count);
  CHECK(store->find_session("s")->message_count == 2);

  // A message may move to a free position.
  store->upsert_message(make_message("s", "m3", 2));
  CHECK(seqs_of(store->all_messages("s")) == std::vector<std::int64_t>{1, 2});

  CHECK(throws_store_error([&] { store->upsert_message(make_message("s", "m9", 1)); }));
  CHECK(throws_store_error([&] { store->upsert_message(make_message("nope", "n1", 1)); }));
  CHECK(store->all_messages("s").size() == 2);
  CHECK(store->all_messages("nope").empty());
}

TEST_CASE_TEMPLATE("conversation_store: delete_messages empties one session's projection", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("other", 2));
  for (std::int64_t seq = 1; seq <= 3; ++seq) store->upsert_message(make_message("s", "s" + std::to_string(seq), seq));
  store->upsert_message(make_message("other", "o1", 1));
  store->insert_checkpoint({"thread-s", "s", 1, "{}", 1});

  store->delete_messages("s");
  CHECK(store->all_messages("s").empty());
  CHECK(store->list_messages("s", 10, 0).total == 0);
  CHECK(store->find_session("s")->message_count == 0);
  CHECK(store->all_messages("other").size() == 1);
  CHECK(store->latest_checkpoint("thread-s"));  // the projection only: checkpoints stay
  CHECK_NOTHROW(store->delete_messages("nope"));

  // Rebuilt from seq 1 again (the projection rebuild).
  store->upsert_message(make_message("s", "r1", 1));
  CHECK(seqs_of(store->all_messages("s")) == std::vector<std::int64_t>{1});
}
