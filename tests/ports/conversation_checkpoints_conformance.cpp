// conversation_store's checkpoints as a run writes them: each version is what it adds
// (append_checkpoint), the newest whole state reads back exactly (latest_conversation),
// and what a store holds stays bounded by the snapshot rule (core/checkpoint_chain.hpp).
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <string>
#include <vector>

#include "core/checkpoint_chain.hpp"
#include "tests/ports/store_impls.hpp"

using namespace agw::test;
using agw::core::checkpoint_delta;
using agw::core::conversation_state;

namespace {

void check_same(const conversation_state& got, const conversation_state& want) {
  REQUIRE(got.messages.size() == want.messages.size());
  for (std::size_t i = 0; i < want.messages.size(); ++i) {
    CAPTURE(i);
    const auto &a = got.messages[i], &b = want.messages[i];
    CHECK(a.id == b.id);
    CHECK(a.session_id == b.session_id);
    CHECK(a.seq == static_cast<std::int64_t>(i + 1));
    CHECK(a.role == b.role);
    CHECK(a.content == b.content);
    CHECK(a.tool_calls == b.tool_calls);
    CHECK(a.tool_call_id == b.tool_call_id);
    CHECK(a.token_count == b.token_count);
    CHECK(a.model_used == b.model_used);
    CHECK(a.parent_id == b.parent_id);
    CHECK(a.status == b.status);
    CHECK(a.created_at_ms == b.created_at_ms);
  }
  REQUIRE(got.run.has_value() == want.run.has_value());
  if (!want.run) return;
  CHECK(got.run->id == want.run->id);
  CHECK(got.run->state == want.run->state);
  CHECK(got.run->user_message_id == want.run->user_message_id);
  CHECK(got.run->started_at_ms == want.run->started_at_ms);
  CHECK(got.run->ended_at_ms == want.run->ended_at_ms);
  CHECK(got.run->events_before == want.run->events_before);
  CHECK(got.run->callback_url == want.run->callback_url);
}

// One turn of session `s`: the user message (with the run `running`), then the answer.
void add_turn(conversation_state& state, const std::string& s, int turn, bool answered) {
  const auto n = std::to_string(turn);
  if (!answered) {
    auto user = make_message(s, s + "-u" + n, static_cast<std::int64_t>(state.messages.size() + 1));
    user.role = "user";
    state.messages.push_back(user);
    state.run = agw::core::checkpoint_run{"run-" + n, "running", user.id, 100 + turn, std::nullopt, turn * 10, std::nullopt};
    return;
  }
  auto answer = make_message(s, s + "-a" + n, static_cast<std::int64_t>(state.messages.size() + 1));
  answer.role = "assistant";
  answer.content = "tok " + std::string(static_cast<std::size_t>(20 + turn % 7), 'x');
  answer.token_count = 2;
  answer.model_used = "mock";
  answer.parent_id = state.messages.back().id;
  state.messages.push_back(answer);
  state.run->state = "completed";
  state.run->ended_at_ms = 200 + turn;
}

checkpoint_delta delta_of(const std::string& s, std::int64_t version, const conversation_state& state, std::size_t from) {
  auto d = agw::core::make_checkpoint_delta(make_session(s, 1), version, state, from);
  d.created_at_ms = 1000 + version;
  return d;
}

}  // namespace

TEST_CASE_TEMPLATE("conversation_checkpoints: many versions restore exactly; snapshots follow the rule; older rows are pruned",
                   impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  CHECK_FALSE(store->latest_conversation("thread-s"));
  CHECK(store->checkpoint_footprint_of("thread-s").rows == 0);
  conversation_state state;
  int snapshots = 0;
  for (std::int64_t version = 1; version <= 120; ++version) {
    CAPTURE(version);
    const auto before = store->checkpoint_footprint_of("thread-s");
    const auto from = state.messages.size();
    add_turn(state, "s", static_cast<int>((version + 1) / 2), version % 2 == 0);
    const auto d = delta_of("s", version, state, version % 2 == 0 ? from - 1 : from);  // the answer re-sends the user message
    store->append_checkpoint(d);
    const auto after = store->checkpoint_footprint_of("thread-s");
    const auto delta_bytes = static_cast<std::int64_t>(agw::core::serialize_delta(d).size());
    const bool due = version == 1 || agw::core::snapshot_due(before.delta_bytes + delta_bytes, before.snapshot_bytes);
    CHECK(after.newest_version == version);
    if (due) {
      ++snapshots;
      CHECK(after.snapshot_version == version);
      CHECK(after.rows == 1);  // everything below the new snapshot is gone
      CHECK(after.delta_bytes == 0);
      CHECK(after.snapshot_bytes == static_cast<std::int64_t>(agw::core::serialize_checkpoint(state).size()));
    } else {
      CHECK(after.snapshot_version == before.snapshot_version);
      CHECK(after.rows == before.rows + 1);
      CHECK(after.delta_bytes == before.delta_bytes + delta_bytes);
      CHECK(after.snapshot_bytes == before.snapshot_bytes);
      CHECK(after.delta_bytes < after.snapshot_bytes);  // what a read costs stays under twice the snapshot
    }
    CHECK(after.rows == after.newest_version - after.snapshot_version + 1);
    const auto latest = store->latest_conversation("thread-s");
    REQUIRE(latest);
    CHECK(latest->version == version);
    CHECK(latest->created_at_ms == 1000 + version);
    check_same(latest->state, state);
  }
  // Snapshots grow geometrically: a handful over 120 versions, not one per N.
  CHECK(snapshots >= 3);
  CHECK(snapshots <= 12);
  // Another connection reads the same.
  auto other = store_impl.open();
  check_same(other->latest_conversation("thread-s")->state, state);
}

TEST_CASE_TEMPLATE("conversation_checkpoints: a delta may change earlier messages (a tool result, a status)", impl,
                   AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  conversation_state state;
  add_turn(state, "s", 1, false);
  auto asked = make_message("s", "s-call", 2);
  asked.tool_calls = boost::json::parse(R"([{"id":"call_1","name":"calculator","args":{"expression":"1+1"}}])").as_array();
  auto result = make_message("s", "s-tool", 3);
  result.role = "tool";
  result.tool_call_id = "call_1";
  result.content = "";
  result.status = "running";
  state.messages.push_back(asked);
  state.messages.push_back(result);
  store->append_checkpoint(delta_of("s", 1, state, 0));
  // Enough versions that the changes below land in deltas, not only in a snapshot.
  for (std::int64_t version = 2; version <= 4; ++version) {
    state.messages[2].content += "2";
    store->append_checkpoint(delta_of("s", version, state, 2));
  }
  // One sparse delta: the tool result finished and the user message's status changed, nothing appended.
  checkpoint_delta sparse = delta_of("s", 5, state, state.messages.size());
  state.messages[0].status = "interrupted";
  state.messages[2].content = "2";
  state.messages[2].status = "complete";
  sparse.messages = {state.messages[0], state.messages[2]};
  sparse.messages[0].seq = 1;
  sparse.messages[1].seq = 3;
  store->append_checkpoint(sparse);
  CHECK(store->checkpoint_footprint_of("thread-s").rows > 1);
  const auto latest = store->latest_conversation("thread-s");
  REQUIRE(latest);
  CHECK(latest->version == 5);
  check_same(latest->state, state);
  // The whole-state text form agrees.
  check_same(agw::core::parse_checkpoint(store->latest_checkpoint("thread-s")->state, "s"), state);
  CHECK(store->latest_checkpoint("thread-s")->version == 5);
}

TEST_CASE_TEMPLATE(
    "conversation_checkpoints: out of order, unknown sessions and deltas that do not fit are refused, writing nothing", impl,
    AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  conversation_state state;
  add_turn(state, "s", 1, false);
  store->append_checkpoint(delta_of("s", 3, state, 0));  // a thread's first version may be any
  const auto held = store->checkpoint_footprint_of("thread-s");
  add_turn(state, "s", 1, true);
  CHECK(throws_store_error([&] { store->append_checkpoint(delta_of("s", 5, state, 1)); }));  // skips 4
  CHECK(throws_store_error([&] { store->append_checkpoint(delta_of("s", 3, state, 1)); }));  // taken
  auto gap = delta_of("s", 4, state, 1);
  gap.message_count = 3;  // position 3 never given
  CHECK_THROWS(store->append_checkpoint(gap));
  CHECK(throws_store_error([&] { store->append_checkpoint(delta_of("nope", 1, state, 0)); }));
  CHECK_FALSE(store->latest_conversation("thread-nope"));
  const auto still = store->checkpoint_footprint_of("thread-s");
  CHECK(still.rows == held.rows);
  CHECK(still.newest_version == 3);
  CHECK(store->latest_conversation("thread-s")->state.messages.size() == 1);
  // The right next version is taken.
  store->append_checkpoint(delta_of("s", 4, state, 1));
  check_same(store->latest_conversation("thread-s")->state, state);
}

TEST_CASE_TEMPLATE("conversation_checkpoints: a delta over a whole state stored as text; deleting the session drops every row",
                   impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  conversation_state state;
  add_turn(state, "s", 1, false);
  add_turn(state, "s", 1, true);
  store->insert_checkpoint({"thread-s", "s", 7, agw::core::serialize_checkpoint(state), 70});
  check_same(store->latest_conversation("thread-s")->state, state);
  add_turn(state, "s", 2, false);
  store->append_checkpoint(delta_of("s", 8, state, 2));
  const auto latest = store->latest_conversation("thread-s");
  CHECK(latest->version == 8);
  check_same(latest->state, state);
  CHECK(store->checkpoint_footprint_of("thread-s").snapshot_version == 7);
  CHECK(store->delete_session("s"));
  CHECK(store->checkpoint_footprint_of("thread-s").rows == 0);
  CHECK_FALSE(store->latest_conversation("thread-s"));
}

TEST_CASE_TEMPLATE("conversation_checkpoints: a snapshot rolled back with its job leaves the rows it pruned", impl,
                   AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  conversation_state state;
  std::int64_t version = 0;
  // Up to the version whose append is due for a snapshot.
  for (int turn = 1;; ++turn) {
    const auto from = state.messages.size();
    add_turn(state, "s", turn, false);
    const auto d = delta_of("s", version + 1, state, from);
    const auto fp = store->checkpoint_footprint_of("thread-s");
    if (version > 1 && agw::core::snapshot_due(fp.delta_bytes + static_cast<std::int64_t>(agw::core::serialize_delta(d).size()),
                                               fp.snapshot_bytes)) {
      store->begin_batch();
      store->savepoint();
      store->append_checkpoint(d);
      CHECK(store->checkpoint_footprint_of("thread-s").rows == 1);
      store->rollback_to_savepoint();
      store->release_savepoint();
      store->commit_batch();
      const auto after = store->checkpoint_footprint_of("thread-s");
      CHECK(after.rows == fp.rows);
      CHECK(after.newest_version == version);
      state.messages.pop_back();
      state.run.reset();
      break;
    }
    store->append_checkpoint(d);
    ++version;
    REQUIRE(version < 100);
  }
  auto latest = store->latest_conversation("thread-s");
  REQUIRE(latest);
  CHECK(latest->version == version);
  CHECK(latest->state.messages.size() == state.messages.size());
}

TEST_CASE_TEMPLATE("conversation_checkpoints: latest_checkpoint_version is the newest version, whatever wrote it", impl,
                   AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("t", 2));
  CHECK_FALSE(store->latest_checkpoint_version("thread-s"));
  conversation_state state;
  add_turn(state, "s", 1, false);
  store->append_checkpoint(delta_of("s", 1, state, 0));
  CHECK(store->latest_checkpoint_version("thread-s") == 1);
  add_turn(state, "s", 1, true);
  store->append_checkpoint(delta_of("s", 2, state, 1));
  CHECK(store->latest_checkpoint_version("thread-s") == 2);
  store->insert_checkpoint({"thread-s", "s", 9, agw::core::serialize_checkpoint(state), 9});
  CHECK(store->latest_checkpoint_version("thread-s") == 9);
  CHECK_FALSE(store->latest_checkpoint_version("thread-t"));  // per thread
  CHECK_FALSE(store->latest_checkpoint_version("s"));         // by thread id, not session id
}
