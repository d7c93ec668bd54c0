// The AI SDK UI message stream encoder, byte for byte: a table of event sequences and
// the exact bytes they make (open/close state across events, steps around tools,
// error then finish, JSON escaping, LF only, [DONE] last).
#include "gateway/encodings/ui_message_stream.hpp"

#include <doctest/doctest.h>

#include <boost/json/object.hpp>
#include <string>
#include <vector>

#include "core/events/sse_format.hpp"

namespace {

using agw::core::event_frame;
using agw::core::event_type;
using agw::core::make_event_frame;
using agw::gateway::encode_ui_message_chunks;
using agw::gateway::ui_stream_state;

constexpr const char* run = "r1";

std::string encode_all(const std::vector<event_frame>& frames) {
  ui_stream_state state;
  std::string out;
  for (const auto& f : frames) encode_ui_message_chunks(state, f, out);
  return out;
}

event_frame token(std::int64_t id, std::string_view text) {
  return make_event_frame(id, event_type::token, run, "content", text);
}
event_frame reasoning(std::int64_t id, std::string_view text) {
  return make_event_frame(id, event_type::reasoning, run, "content", text);
}
event_frame status(std::int64_t id, std::string_view s) { return make_event_frame(id, event_type::status, run, "status", s); }
event_frame done(std::int64_t id, std::string_view message_status = "complete") {
  return make_event_frame(id, event_type::done, run,
                          boost::json::object{{"assistant_data", boost::json::object{{"status", message_status}}}});
}
event_frame tool_call(std::int64_t id) {
  return make_event_frame(id, event_type::tool_call, run,
                          boost::json::object{{"id", "c1"}, {"name", "calculator"}, {"args", {{"expression", "2+3*4"}}}});
}
event_frame tool_result(std::int64_t id, int exit_code, std::string_view output) {
  return make_event_frame(id, event_type::tool_result, run,
                          boost::json::object{{"tool_call_id", "c1"}, {"output", output}, {"exit_code", exit_code}});
}

std::string chunk(std::int64_t id, std::string_view json) {
  return "id: " + std::to_string(id) + "\ndata: " + std::string(json) + "\n\n";
}
const std::string done_line = "data: [DONE]\n\n";

}  // namespace

TEST_CASE("ui message stream: a text run is start, a step with one text part, finish, [DONE]") {
  const auto out = encode_all({status(1, "thinking"), token(2, "Hello"), token(3, " world"), done(4)});
  CHECK(out == chunk(1, R"({"type":"start","messageId":"r1"})") + chunk(2, R"({"type":"start-step"})") +
                   chunk(2, R"({"type":"text-start","id":"text-2"})") +
                   chunk(2, R"({"type":"text-delta","id":"text-2","delta":"Hello"})") +
                   chunk(3, R"({"type":"text-delta","id":"text-2","delta":" world"})") +
                   chunk(4, R"({"type":"text-end","id":"text-2"})") + chunk(4, R"({"type":"finish-step"})") +
                   chunk(4, R"({"type":"finish","finishReason":"stop"})") + done_line);
}

TEST_CASE("ui message stream: reasoning then text closes the reasoning part before the text opens") {
  const auto out = encode_all({reasoning(1, "hmm"), reasoning(2, "..."), token(3, "ok"), reasoning(4, "again"), done(5)});
  CHECK(out ==
        chunk(1, R"({"type":"start","messageId":"r1"})") + chunk(1, R"({"type":"start-step"})") +
            chunk(1, R"({"type":"reasoning-start","id":"reasoning-1"})") +
            chunk(1, R"({"type":"reasoning-delta","id":"reasoning-1","delta":"hmm"})") +
            chunk(2, R"({"type":"reasoning-delta","id":"reasoning-1","delta":"..."})") +
            chunk(3, R"({"type":"reasoning-end","id":"reasoning-1"})") + chunk(3, R"({"type":"text-start","id":"text-3"})") +
            chunk(3, R"({"type":"text-delta","id":"text-3","delta":"ok"})") + chunk(4, R"({"type":"text-end","id":"text-3"})") +
            chunk(4, R"({"type":"reasoning-start","id":"reasoning-4"})") +
            chunk(4, R"({"type":"reasoning-delta","id":"reasoning-4","delta":"again"})") +
            chunk(5, R"({"type":"reasoning-end","id":"reasoning-4"})") + chunk(5, R"({"type":"finish-step"})") +
            chunk(5, R"({"type":"finish","finishReason":"stop"})") + done_line);
}

TEST_CASE("ui message stream: a tool call and its result end the step; the answer is a new step") {
  const auto out = encode_all({status(1, "tool"), tool_call(2), tool_result(3, 0, "14"), token(4, "14"), done(5)});
  CHECK(out ==
        chunk(1, R"({"type":"start","messageId":"r1"})") + chunk(2, R"({"type":"start-step"})") +
            chunk(2, R"({"type":"tool-input-start","toolCallId":"c1","toolName":"calculator"})") +
            chunk(2,
                  R"({"type":"tool-input-available","toolCallId":"c1","toolName":"calculator","input":{"expression":"2+3*4"}})") +
            chunk(3, R"({"type":"tool-output-available","toolCallId":"c1","output":"14"})") +
            chunk(4, R"({"type":"finish-step"})") + chunk(4, R"({"type":"start-step"})") +
            chunk(4, R"({"type":"text-start","id":"text-4"})") + chunk(4, R"({"type":"text-delta","id":"text-4","delta":"14"})") +
            chunk(5, R"({"type":"text-end","id":"text-4"})") + chunk(5, R"({"type":"finish-step"})") +
            chunk(5, R"({"type":"finish","finishReason":"stop"})") + done_line);
}

TEST_CASE("ui message stream: a failed tool is tool-output-error with its output as the error text") {
  const auto out = encode_all({tool_call(1), tool_result(2, 1, "division by zero")});
  CHECK(out.find(chunk(2, R"({"type":"tool-output-error","toolCallId":"c1","errorText":"division by zero"})")) !=
        std::string::npos);
  CHECK(out.find("tool-output-available") == std::string::npos);
}

TEST_CASE("ui message stream: error closes the open text, then finish says error; [DONE] is last") {
  const auto error =
      make_event_frame(3, event_type::error, run, boost::json::object{{"code", "agent_failed"}, {"message", "mock failure"}});
  const auto out = encode_all({token(1, "a"), token(2, "b"), error, done(4, "error")});
  CHECK(out == chunk(1, R"({"type":"start","messageId":"r1"})") + chunk(1, R"({"type":"start-step"})") +
                   chunk(1, R"({"type":"text-start","id":"text-1"})") +
                   chunk(1, R"({"type":"text-delta","id":"text-1","delta":"a"})") +
                   chunk(2, R"({"type":"text-delta","id":"text-1","delta":"b"})") +
                   chunk(3, R"({"type":"text-end","id":"text-1"})") + chunk(3, R"({"type":"error","errorText":"mock failure"})") +
                   chunk(4, R"({"type":"finish-step"})") + chunk(4, R"({"type":"finish","finishReason":"error"})") + done_line);
}

TEST_CASE("ui message stream: an aborted run finishes with reason other") {
  const auto out = encode_all({token(1, "a"), status(2, "aborted"), done(3, "aborted")});
  CHECK(out.ends_with(chunk(3, R"({"type":"finish","finishReason":"other"})") + done_line));
}

TEST_CASE("ui message stream: deltas are JSON-escaped, one data line each, LF only") {
  const auto out = encode_all({token(1, "line1\nline2\r\n\"q\" \\ \t\x01 é"), done(2)});
  CHECK(out.find(R"("delta":"line1\nline2\r\n\"q\" \\ \t\u0001 é")") != std::string::npos);
  CHECK(out.find('\r') == std::string::npos);
  // Every line is an id:, a data: or the blank line between frames.
  std::size_t at = 0;
  while (at < out.size()) {
    const auto end = out.find('\n', at);
    REQUIRE(end != std::string::npos);
    const std::string_view line(out.data() + at, end - at);
    CHECK((line.empty() || line.starts_with("id: ") || line.starts_with("data: ")));
    at = end + 1;
  }
  CHECK(out.ends_with("\n\ndata: [DONE]\n\n"));
}

TEST_CASE("ui message stream: events of no UI meaning make nothing but the start; nothing after finish") {
  const auto usage = make_event_frame(2, event_type::usage, run, boost::json::object{{"input_tokens", 1}});
  const auto planning = make_event_frame(3, event_type::planning, run, boost::json::object{{"steps", boost::json::array{}}});
  ui_stream_state state;
  std::string out;
  encode_ui_message_chunks(state, status(1, "thinking"), out);
  CHECK(out == chunk(1, R"({"type":"start","messageId":"r1"})"));
  encode_ui_message_chunks(state, usage, out);
  encode_ui_message_chunks(state, planning, out);
  CHECK(out == chunk(1, R"({"type":"start","messageId":"r1"})"));
  encode_ui_message_chunks(state, done(4), out);
  CHECK(state.finished);
  const auto finished = out;
  encode_ui_message_chunks(state, token(5, "late"), out);
  CHECK(out == finished);
  // A finish with no content still closes nothing it never opened.
  CHECK(finished ==
        chunk(1, R"({"type":"start","messageId":"r1"})") + chunk(4, R"({"type":"finish","finishReason":"stop"})") + done_line);
}

TEST_CASE("ui message stream: an unnumbered frame (reconnected) makes nothing") {
  ui_stream_state state;
  std::string out;
  encode_ui_message_chunks(state, agw::core::make_reconnected_frame(3, 3, false, 1), out);
  CHECK(out.empty());
  CHECK_FALSE(state.started);
}

TEST_CASE("ui message stream: a token's literal is sliced out as the frame holds it; another layout is parsed") {
  // \u0041 is "A" escaped: parsing the data and writing the string again would give A.
  for (const char* source : {"ai_agent", "human_agent_on_behalf_of_ai_agent"}) {
    CAPTURE(source);
    const auto stored = agw::core::make_event_frame_after_run(1, event_type::token, run, source, R"(,"content":"\u0041b"})");
    CHECK(encode_all({stored}).find(R"("delta":"\u0041b"})") != std::string::npos);
  }
  const auto other =
      agw::core::make_event_frame_after_run(1, event_type::token, run, "ai_agent", R"(,"content":"\u0041b","extra":1})");
  CHECK(encode_all({other}).find(R"("delta":"Ab"})") != std::string::npos);
}

TEST_CASE("ui message stream: a token's content is taken whole whatever the data's layout") {
  // The usual layout ({"run_id","source","content"}) is sliced; any other is parsed: same chunks.
  const auto sliced = token(1, "a \"quoted\" \\ word");
  const auto parsed = make_event_frame(1, event_type::token, run,
                                       boost::json::object{{"content", "a \"quoted\" \\ word"}, {"extra", "\",\"x\":\""}});
  const auto a = encode_all({sliced});
  CHECK(a == encode_all({parsed}));
  CHECK(a.find(R"("delta":"a \"quoted\" \\ word"})") != std::string::npos);
}
