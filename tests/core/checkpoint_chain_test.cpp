#include "core/checkpoint_chain.hpp"

#include <doctest/doctest.h>

#include "core/storage/store_error.hpp"

namespace {

using agw::core::checkpoint_delta;
using agw::core::checkpoint_tip;
using agw::core::conversation_state;
using agw::core::message_record;
using agw::core::plan_checkpoint_row;

message_record message(std::string id, std::int64_t seq, std::string content) {
  message_record m;
  m.id = std::move(id);
  m.session_id = "s";
  m.seq = seq;
  m.role = "user";
  m.content = std::move(content);
  return m;
}

checkpoint_delta append_one(std::int64_t version, std::int64_t seq, std::string content = "x") {
  checkpoint_delta d;
  d.thread_id = "t";
  d.session_id = "s";
  d.version = version;
  d.message_count = seq;
  d.messages = {message("m" + std::to_string(seq), seq, std::move(content))};
  return d;
}

conversation_state never_read() { throw std::logic_error("the chain was read"); }

}  // namespace

TEST_CASE("checkpoint_chain: a thread's first version is a snapshot of the delta applied to nothing") {
  const auto row = plan_checkpoint_row(std::nullopt, append_one(7, 1, "hello"), never_read);
  CHECK(row.snapshot);
  CHECK(row.message_count == 1);
  CHECK(row.delta_bytes == 0);
  CHECK(row.snapshot_bytes == static_cast<std::int64_t>(row.text.size()));
  const auto state = agw::core::parse_checkpoint(row.text, "s");
  REQUIRE(state.messages.size() == 1);
  CHECK(state.messages[0].content == "hello");
}

TEST_CASE("checkpoint_chain: deltas accumulate until they hold as many bytes as the snapshot") {
  const checkpoint_tip tip{3, 2, 100, 1000};
  const auto row = plan_checkpoint_row(tip, append_one(4, 3), never_read);
  CHECK_FALSE(row.snapshot);
  CHECK(row.message_count == 3);
  CHECK(row.delta_bytes == 100 + static_cast<std::int64_t>(row.text.size()));
  CHECK(row.snapshot_bytes == 1000);
  CHECK(agw::core::parse_delta(row.text, "s").messages.size() == 1);

  // Due: the whole state is read once, the delta applied, and a snapshot written.
  const checkpoint_tip full{3, 2, 990, 1000};
  auto base = [] {
    conversation_state s;
    s.messages = {message("m1", 1, "a"), message("m2", 2, "b")};
    return s;
  };
  const auto snap = plan_checkpoint_row(full, append_one(4, 3, "c"), base);
  CHECK(snap.snapshot);
  CHECK(snap.delta_bytes == 0);
  const auto state = agw::core::parse_checkpoint(snap.text, "s");
  REQUIRE(state.messages.size() == 3);
  CHECK(state.messages[2].content == "c");
  CHECK(agw::core::snapshot_due(1000, 1000));
  CHECK_FALSE(agw::core::snapshot_due(999, 1000));
}

TEST_CASE("checkpoint_chain: a due snapshot comes from the writer's whole state when it has one, without reading the chain") {
  const checkpoint_tip full{3, 2, 990, 1000};
  conversation_state whole;
  whole.messages = {message("m1", 1, "a"), message("m2", 2, "b"), message("m3", 3, "c")};
  auto d = append_one(4, 3, "c");
  d.whole_state = &whole;
  const auto snap = plan_checkpoint_row(full, d, never_read);
  CHECK(snap.snapshot);
  // Byte for byte what folding the chain and applying the delta writes.
  auto base = [] {
    conversation_state s;
    s.messages = {message("m1", 1, "a"), message("m2", 2, "b")};
    return s;
  };
  d.whole_state = nullptr;
  CHECK(plan_checkpoint_row(full, d, base).text == snap.text);
  // A whole state that does not match the delta's count is not trusted: the chain is read.
  conversation_state stale;
  stale.messages = {message("m1", 1, "a")};
  d.whole_state = &stale;
  CHECK_THROWS_AS(plan_checkpoint_row(full, d, never_read), std::logic_error);
  // Not due: a delta, whatever the writer holds.
  d.whole_state = &whole;
  CHECK_FALSE(plan_checkpoint_row(checkpoint_tip{3, 2, 0, 1000}, d, never_read).snapshot);
}

TEST_CASE("checkpoint_chain: a version that does not follow, or a delta that does not fit, is refused") {
  const checkpoint_tip tip{3, 2, 0, 1000};
  CHECK_THROWS_AS(plan_checkpoint_row(tip, append_one(5, 3), never_read), agw::core::store_error);
  CHECK_THROWS_AS(plan_checkpoint_row(tip, append_one(3, 3), never_read), agw::core::store_error);
  CHECK_THROWS_AS(plan_checkpoint_row(tip, append_one(4, 4), never_read), std::runtime_error);  // leaves seq 3 empty
  // A whole state stored as given (count unknown) takes the delta; its fit is checked when folded.
  const checkpoint_tip unknown{3, -1, 0, 1000};
  CHECK_FALSE(plan_checkpoint_row(unknown, append_one(4, 4), never_read).snapshot);
}

TEST_CASE("checkpoint_chain: fold applies the deltas to the snapshot in order") {
  conversation_state base;
  base.messages = {message("m1", 1, "a")};
  std::vector<std::string> deltas = {agw::core::serialize_delta(append_one(2, 2, "b")),
                                     agw::core::serialize_delta(append_one(3, 3, "c"))};
  auto changed = append_one(4, 1, "a2");
  changed.message_count = 3;
  deltas.push_back(agw::core::serialize_delta(changed));
  const auto state = agw::core::fold_checkpoints(agw::core::serialize_checkpoint(base), deltas, "s");
  REQUIRE(state.messages.size() == 3);
  CHECK(state.messages[0].content == "a2");
  CHECK(state.messages[1].content == "b");
  CHECK(state.messages[2].content == "c");
  CHECK(state.messages[2].seq == 3);
}

TEST_CASE("checkpoint_chain: over a long conversation the bytes written stay within 3x what the versions add") {
  // Two versions a turn, as runs write them: the user message, then the answer (re-sending the user message).
  agw::core::session_record s;
  s.id = "s";
  s.thread_id = "t";
  conversation_state state;
  std::optional<checkpoint_tip> tip;
  std::int64_t version = 0, written = 0, added = 0, snapshots = 0;
  auto write = [&](std::size_t from) {
    auto d = agw::core::make_checkpoint_delta(s, ++version, state, from);
    const auto row = plan_checkpoint_row(tip, d, [&] { return state; });
    written += static_cast<std::int64_t>(row.text.size());
    added += static_cast<std::int64_t>(agw::core::serialize_delta(d).size());
    snapshots += row.snapshot ? 1 : 0;
    tip = checkpoint_tip{version, row.message_count, row.delta_bytes, row.snapshot_bytes};
  };
  for (int turn = 1; turn <= 400; ++turn) {
    CAPTURE(turn);
    state.messages.push_back(message("u" + std::to_string(turn), 0, "hello"));
    write(state.messages.size() - 1);
    state.messages.push_back(message("a" + std::to_string(turn), 0, std::string(300, 'x')));
    write(state.messages.size() - 2);
    CHECK(written <= 3 * added);
    CHECK(tip->delta_bytes < tip->snapshot_bytes);  // a read is under twice the snapshot
  }
  // Snapshots grow geometrically: about log2 of the versions, not one every N.
  CHECK(snapshots <= 14);
}
