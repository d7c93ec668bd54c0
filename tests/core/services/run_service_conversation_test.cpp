// run_service and the conversations kept between runs (core/runs/conversation_cache.hpp):
// a run starts from the conversation the last one kept while the store holds no newer version.
#include <doctest/doctest.h>

#include <algorithm>

#include "core/projection.hpp"
#include "core/services/run_service.hpp"
#include "tests/core/services/services_fixture.hpp"

namespace {

using agw::core::start_request;
using agw::test::services_fixture;

start_request message(std::string content) { return start_request{std::move(content), std::nullopt, std::nullopt}; }

// The calls the fake store logged since `from` (an index into db.calls()).
std::vector<std::string> calls_since(const agw::test::fake_db& db, std::size_t from) {
  const auto all = db.calls();
  return {all.begin() + static_cast<std::ptrdiff_t>(std::min(from, all.size())), all.end()};
}

std::size_t count_calls(const std::vector<std::string>& calls, const char* name) {
  return static_cast<std::size_t>(
      std::count_if(calls.begin(), calls.end(), [&](const std::string& c) { return c.ends_with(std::string(":") + name); }));
}

bool any_call(const std::vector<std::string>& calls, const char* name) { return count_calls(calls, name) > 0; }

}  // namespace

TEST_CASE("run_service: the next run starts from the conversation the last one kept, without reading it back") {
  services_fixture f;
  auto s = f.create();
  f.await(f.runs.start(s.session, message("one two")));
  f.settle();
  const auto from = f.db.calls().size();
  f.await(f.runs.start(s.session, message("three")));
  f.settle();
  const auto calls = calls_since(f.db, from);
  CHECK(any_call(calls, "latest_checkpoint_version"));
  CHECK_FALSE(any_call(calls, "latest_conversation"));

  auto conn = f.db.connect();
  const auto latest = conn->latest_conversation(s.session.thread_id);
  REQUIRE(latest);
  REQUIRE(latest->state.messages.size() == 4);
  CHECK(latest->state.messages[0].content == "one two");
  CHECK(latest->state.messages[1].content == "one two");  // the mock echoes the prompt
  CHECK(latest->state.messages[2].content == "three");
  CHECK(latest->state.messages[3].content == "three");
  CHECK(latest->version == 4);
  CHECK(conn->all_messages(s.session.id).size() == 4);
  // The second run's agent saw the whole conversation: the mock's input tokens are its words.
  std::vector<std::int64_t> input_tokens;
  for (const auto& e : conn->events_after(s.session.id, 0, 1000))
    if (e->type == agw::core::event_type::usage)
      input_tokens.push_back(boost::json::parse(e->data()).at("input_tokens").as_int64());
  CHECK(input_tokens == std::vector<std::int64_t>{2, 5});
}

TEST_CASE("run_service: a kept conversation the store has moved past is not used") {
  services_fixture f;
  auto s = f.create();
  f.await(f.runs.start(s.session, message("first")));
  f.settle();
  // Another writer adds a version (as the start-up repair would).
  auto conn = f.db.connect();
  auto state = conn->latest_conversation(s.session.thread_id)->state;
  auto note = state.messages.back();
  note.id = "note-1";
  note.content = "written elsewhere";
  state.messages.push_back(note);
  agw::core::save_checkpoint(*conn, f.clock, s.session, 3, state, 2);

  const auto from = f.db.calls().size();
  f.await(f.runs.start(s.session, message("second")));
  f.settle();
  CHECK(any_call(calls_since(f.db, from), "latest_conversation"));
  const auto latest = conn->latest_conversation(s.session.thread_id);
  REQUIRE(latest);
  REQUIRE(latest->state.messages.size() == 5);
  CHECK(latest->state.messages[2].content == "written elsewhere");
  CHECK(latest->state.messages[3].content == "second");
  CHECK(latest->version == 5);
}

TEST_CASE("run_service: a run's checkpoints write each of its messages once, not the ones before again") {
  services_fixture f;
  // A tool step: the run checkpoints after the tool's result, then at its end.
  auto s =
      f.create(R"({"config": {"mock": {"tokens": 2, "tool_calls": [{"name": "calculator", "args": {"expression": "2+3"}}]}}})");
  f.await(f.runs.start(s.session, message("add")));
  f.settle();
  const auto from = f.db.calls().size();
  f.await(f.runs.start(s.session, message("again")));
  f.settle();
  const auto calls = calls_since(f.db, from);
  // Its user message (with the start's checkpoint), the call, the tool's result, the answer:
  // each projected once. Before, each checkpoint rewrote the run's messages from its user message on.
  CHECK(count_calls(calls, "append_checkpoint") == 3);
  CHECK(count_calls(calls, "upsert_message") == 4);

  auto conn = f.db.connect();
  const auto latest = conn->latest_conversation(s.session.thread_id);
  REQUIRE(latest);
  REQUIRE(latest->state.messages.size() == 8);
  std::vector<std::string> roles;
  for (const auto& m : latest->state.messages) roles.push_back(m.role);
  CHECK(roles == std::vector<std::string>{"user", "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant"});
  CHECK(latest->state.messages[4].content == "again");
  CHECK(latest->state.run->state == "completed");
  // The projection is the checkpoint's conversation, row for row.
  CHECK_FALSE(agw::core::projection_drifted(*conn, conn->find_session(s.session.id).value()));
}
