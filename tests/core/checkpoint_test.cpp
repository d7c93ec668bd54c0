#include "core/checkpoint.hpp"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <stdexcept>

namespace {

using agw::core::checkpoint_run;
using agw::core::conversation_state;
using agw::core::message_json;
using agw::core::message_record;
using agw::core::parse_checkpoint;
using agw::core::serialize_checkpoint;

message_record message(std::string id, std::string role, std::string content) {
  message_record m;
  m.id = std::move(id);
  m.role = std::move(role);
  m.content = std::move(content);
  m.created_at_ms = 1700000000123;
  return m;
}

void check_same_message(const message_record& a, const message_record& b) {
  CHECK(a.id == b.id);
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

conversation_state full_state() {
  conversation_state state;
  auto user = message("m1", "user", "what is 2+2?\nthanks \xC3\xA9");
  auto assistant = message("m2", "assistant", "");
  assistant.tool_calls = boost::json::array{
      boost::json::object{{"id", "call_1"}, {"name", "calculator"}, {"args", boost::json::object{{"expression", "2+2"}}}},
      boost::json::object{{"id", "call_2"}, {"name", "current_time"}, {"args", boost::json::object{}}}};
  assistant.model_used = "mock";
  assistant.parent_id = "m1";
  auto tool = message("m3", "tool", "4");
  tool.tool_call_id = "call_1";
  tool.parent_id = "m2";
  auto answer = message("m4", "assistant", "4");
  answer.token_count = 1;
  answer.model_used = "mock";
  answer.parent_id = "m1";
  answer.status = "aborted";
  answer.created_at_ms = 0;
  state.messages = {user, assistant, tool, answer};
  state.run = checkpoint_run{"run-1", "aborted", "m1", 1700000000000, 1700000000999, 41, "https://hooks.example/run"};
  return state;
}

}  // namespace

TEST_CASE("checkpoint: serialize/parse round trip with tool calls and optional fields") {
  const auto state = full_state();
  const auto text = serialize_checkpoint(state);
  const auto parsed = parse_checkpoint(text, "session-9");
  REQUIRE(parsed.messages.size() == state.messages.size());
  for (std::size_t i = 0; i < state.messages.size(); ++i) {
    CAPTURE(i);
    check_same_message(parsed.messages[i], state.messages[i]);
    CHECK(parsed.messages[i].session_id == "session-9");
    CHECK(parsed.messages[i].seq == static_cast<std::int64_t>(i + 1));
  }
  REQUIRE(parsed.run);
  CHECK(parsed.run->id == "run-1");
  CHECK(parsed.run->state == "aborted");
  CHECK(parsed.run->user_message_id == "m1");
  CHECK(parsed.run->started_at_ms == 1700000000000);
  CHECK(parsed.run->ended_at_ms == 1700000000999);
  CHECK(parsed.run->events_before == 41);
  CHECK(parsed.run->callback_url == "https://hooks.example/run");
  // Serializing the parsed state gives the same text: nothing lost, nothing added.
  CHECK(serialize_checkpoint(parsed) == text);
}

TEST_CASE("checkpoint: empty conversation, no run, running run without end") {
  conversation_state empty;
  const auto parsed_empty = parse_checkpoint(serialize_checkpoint(empty), "s");
  CHECK(parsed_empty.messages.empty());
  CHECK_FALSE(parsed_empty.run);

  conversation_state running;
  running.messages = {message("u", "user", "hi")};
  running.run = checkpoint_run{"r", "running", "u", 10, std::nullopt, 0, std::nullopt};
  const auto parsed = parse_checkpoint(serialize_checkpoint(running), "s");
  REQUIRE(parsed.run);
  CHECK_FALSE(parsed.run->ended_at_ms);
  CHECK(parsed.run->state == "running");
  // Optional message fields stay absent.
  REQUIRE(parsed.messages.size() == 1);
  CHECK_FALSE(parsed.messages[0].tool_call_id);
  CHECK_FALSE(parsed.messages[0].token_count);
  CHECK_FALSE(parsed.messages[0].model_used);
  CHECK_FALSE(parsed.messages[0].parent_id);
  CHECK(parsed.messages[0].tool_calls.empty());
  CHECK(parsed.messages[0].status == "complete");
}

TEST_CASE("checkpoint: serialized layout") {
  const auto v = boost::json::parse(serialize_checkpoint(full_state())).as_object();
  CHECK(v.at("format") == 1);
  CHECK(v.at("messages").as_array().size() == 4);
  const auto& m = v.at("messages").as_array()[2].as_object();
  CHECK(m.at("tool_call_id") == "call_1");
  CHECK(m.at("token_count").is_null());
  CHECK(v.at("run").as_object().at("events_before") == 41);
  conversation_state no_run;
  CHECK(boost::json::parse(serialize_checkpoint(no_run)).as_object().at("run").is_null());
}

TEST_CASE("checkpoint: parse rejects unreadable checkpoints") {
  const char* rows[] = {
      R"({"format":2,"messages":[],"run":null})",
      R"({"messages":[],"run":null})",
      R"({"format":1})",
      R"({"format":1,"messages":[{"id":"x"}],"run":null})",
      R"({"format":1,"messages":[{"id":1,"role":"user","content":"","tool_calls":[],"status":"complete","created_at_ms":0}]})",
      R"([])",
      R"(not json)",
  };
  for (const char* text : rows) {
    CAPTURE(text);
    CHECK_THROWS(parse_checkpoint(text, "s"));
  }
  // A checkpoint written before events_before existed still reads (as 0).
  const auto old = parse_checkpoint(
      R"({"format":1,"messages":[],"run":{"id":"r","state":"completed","user_message_id":"u","started_at_ms":1,"ended_at_ms":2}})",
      "s");
  REQUIRE(old.run);
  CHECK(old.run->events_before == 0);
}

TEST_CASE("checkpoint: message_json field set") {
  auto m = full_state().messages[1];
  m.session_id = "sess";
  const auto o = message_json(m);
  const char* fields[] = {"id",          "session_id", "role",      "content", "tool_calls", "tool_call_id",
                          "token_count", "model_used", "parent_id", "status",  "created_at", "source"};
  CHECK(o.size() == std::size(fields));
  for (const char* f : fields) {
    CAPTURE(f);
    CHECK(o.contains(f));
  }
  // Stored before sources: its role's default; otherwise the stored one, round-tripped.
  CHECK(o.at("source") == (m.role == "user" ? "customer" : "ai_agent"));
  m.source = "human_agent";
  CHECK(message_json(m).at("source") == "human_agent");
  agw::core::conversation_state state;
  state.messages.push_back(m);
  CHECK(parse_checkpoint(serialize_checkpoint(state), "sess").messages[0].source == "human_agent");
  CHECK(o.at("id") == "m2");
  CHECK(o.at("session_id") == "sess");
  CHECK(o.at("role") == "assistant");
  CHECK(o.at("content") == "");
  CHECK(o.at("tool_calls").as_array().size() == 2);
  CHECK(o.at("tool_call_id").is_null());
  CHECK(o.at("token_count").is_null());
  CHECK(o.at("model_used") == "mock");
  CHECK(o.at("parent_id") == "m1");
  CHECK(o.at("status") == "complete");
  CHECK(o.at("created_at") == "2023-11-14T22:13:20.123Z");
  CHECK_FALSE(o.contains("seq"));
  CHECK_FALSE(o.contains("created_at_ms"));

  auto tool = full_state().messages[2];
  const auto t = message_json(tool);
  CHECK(t.at("tool_call_id") == "call_1");
  auto counted = full_state().messages[3];
  CHECK(message_json(counted).at("token_count") == 1);
  CHECK(message_json(counted).at("created_at") == "1970-01-01T00:00:00.000Z");
}
