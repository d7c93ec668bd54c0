#include "core/checkpoint_delta.hpp"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <stdexcept>

namespace {

using agw::core::apply_delta;
using agw::core::checkpoint_delta;
using agw::core::checkpoint_run;
using agw::core::conversation_state;
using agw::core::make_checkpoint_delta;
using agw::core::message_record;
using agw::core::parse_delta;
using agw::core::serialize_delta;

message_record message(std::string id, std::string role, std::string content, std::int64_t seq = 0) {
  message_record m;
  m.id = std::move(id);
  m.role = std::move(role);
  m.content = std::move(content);
  m.seq = seq;
  m.created_at_ms = 1700000000000 + seq;
  return m;
}

agw::core::session_record session() {
  agw::core::session_record s;
  s.id = "s1";
  s.thread_id = "thread-s1";
  return s;
}

conversation_state three_messages() {
  conversation_state state;
  state.messages = {message("u1", "user", "hi"), message("a1", "assistant", "hello"), message("u2", "user", "again")};
  state.run = checkpoint_run{"run-2", "running", "u2", 10, std::nullopt, 7, std::nullopt};
  return state;
}

}  // namespace

TEST_CASE("checkpoint_delta: made from the unchanged prefix on; messages carry session and seq") {
  const auto d = make_checkpoint_delta(session(), 4, three_messages(), 2);
  CHECK(d.thread_id == "thread-s1");
  CHECK(d.session_id == "s1");
  CHECK(d.version == 4);
  CHECK(d.message_count == 3);
  REQUIRE(d.messages.size() == 1);
  CHECK(d.messages[0].id == "u2");
  CHECK(d.messages[0].seq == 3);
  CHECK(d.messages[0].session_id == "s1");
  REQUIRE(d.run);
  CHECK(d.run->id == "run-2");
  CHECK(make_checkpoint_delta(session(), 1, three_messages(), 0).messages.size() == 3);
  CHECK(make_checkpoint_delta(session(), 1, three_messages(), 3).messages.empty());  // the run's state only
}

TEST_CASE("checkpoint_delta: serialize/parse round trip keeps every field and each message's position") {
  auto state = three_messages();
  state.messages[1].tool_calls = boost::json::parse(R"([{"id":"c1","name":"calculator","args":{"expression":"1"}}])").as_array();
  state.messages[1].token_count = 3;
  state.messages[1].model_used = "mock";
  state.messages[1].parent_id = "u1";
  state.messages[1].status = "aborted";
  state.run->callback_url = "https://hooks.example/x";
  const auto d = make_checkpoint_delta(session(), 2, state, 1);
  const auto text = serialize_delta(d);
  const auto back = parse_delta(text, "s1");
  CHECK(back.message_count == 3);
  REQUIRE(back.messages.size() == 2);
  CHECK(back.messages[0].seq == 2);
  CHECK(back.messages[1].seq == 3);
  CHECK(back.messages[0].tool_calls == state.messages[1].tool_calls);
  CHECK(back.messages[0].token_count == 3);
  CHECK(back.messages[0].model_used == "mock");
  CHECK(back.messages[0].parent_id == "u1");
  CHECK(back.messages[0].status == "aborted");
  CHECK(back.messages[0].created_at_ms == state.messages[1].created_at_ms);
  CHECK(back.messages[0].session_id == "s1");
  REQUIRE(back.run);
  CHECK(back.run->callback_url == "https://hooks.example/x");
  CHECK(back.run->events_before == 7);
  CHECK(serialize_delta(back) == text);  // nothing lost, nothing added

  conversation_state no_run;
  CHECK_FALSE(parse_delta(serialize_delta(make_checkpoint_delta(session(), 1, no_run, 0)), "s1").run);
}

TEST_CASE("checkpoint_delta: apply appends, rewrites earlier messages in place, and sets the run") {
  conversation_state state;
  state.messages = {message("u1", "user", "hi", 1), message("a1", "assistant", "par", 2)};
  checkpoint_delta d;
  d.message_count = 4;
  auto finished = message("a1", "assistant", "partial then whole", 2);
  finished.status = "interrupted";
  d.messages = {finished, message("t1", "tool", "4", 3), message("a2", "assistant", "done", 4)};
  d.run = checkpoint_run{"run-1", "completed", "u1", 1, 2, 0, std::nullopt};
  apply_delta(state, d);
  REQUIRE(state.messages.size() == 4);
  CHECK(state.messages[0].content == "hi");
  CHECK(state.messages[1].content == "partial then whole");
  CHECK(state.messages[1].status == "interrupted");
  CHECK(state.messages[2].id == "t1");
  CHECK(state.run->state == "completed");

  // A sparse change: one earlier message only, the count unchanged.
  checkpoint_delta status_only;
  status_only.message_count = 4;
  auto edited = message("u1", "user", "hi (edited)", 1);
  status_only.messages = {edited};
  apply_delta(state, status_only);
  CHECK(state.messages[0].content == "hi (edited)");
  CHECK(state.messages[3].id == "a2");
  CHECK_FALSE(state.run);  // the run is whole in every delta
}

TEST_CASE("checkpoint_delta: a delta that does not fit is refused") {
  struct row {
    const char* what;
    std::int64_t count;
    std::vector<std::int64_t> seqs;
  };
  const row rows[] = {
      {"a new position left empty", 4, {4}},
      {"past its own count", 3, {3, 4}},
      {"out of order", 4, {4, 3}},
      {"twice", 3, {3, 3}},
      {"seq 0", 3, {0, 3}},
      {"negative count", -1, {}},
  };
  for (const auto& r : rows) {
    CAPTURE(r.what);
    conversation_state state;
    state.messages = {message("u1", "user", "hi", 1), message("a1", "assistant", "x", 2)};
    checkpoint_delta d;
    d.message_count = r.count;
    for (auto seq : r.seqs) d.messages.push_back(message("m" + std::to_string(seq), "user", "", seq));
    CHECK_THROWS_AS(apply_delta(state, d), std::runtime_error);
  }
  const char* texts[] = {R"({"format":2,"message_count":0,"messages":[],"run":null})", R"({"format":1,"messages":[],"run":null})",
                         R"({"format":1,"message_count":1,"messages":[{"id":"x"}],"run":null})", "not json"};
  for (const char* text : texts) {
    CAPTURE(text);
    CHECK_THROWS(parse_delta(text, "s"));
  }
}
