// The AG-UI encoder, byte for byte: a table of a run's event sequences and the exact
// AG-UI text each must become (id lines, one data line per event, LF only), plus the
// edge cases: empty deltas, other runs' events, unnumbered frames, nothing after the end.
#include "gateway/encodings/ag_ui_encoder.hpp"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <string>
#include <vector>

#include "core/events/sse_format.hpp"

namespace {

namespace json = boost::json;
using agw::core::event_frame;
using agw::core::event_type;
using agw::core::make_event_frame;
using agw::gateway::ag_ui_encoder;

const std::string run = "R";

event_frame ev(std::int64_t id, event_type type, std::string_view data, std::string_view run_id = run) {
  return make_event_frame(id, type, run_id, json::parse(data).as_object());
}

// The frames through a fresh encoder (thread T, client run C, our run R).
std::string encode(const std::vector<event_frame>& frames) {
  ag_ui_encoder enc("T", "C", run);
  std::string out;
  for (const auto& f : frames) enc.encode(f, out);
  return out;
}

std::string line(std::int64_t id, std::string_view json_text) {
  return "id: " + std::to_string(id) + "\ndata: " + std::string(json_text) + "\n\n";
}

const std::string started = R"({"type":"RUN_STARTED","threadId":"T","runId":"C"})";
const std::string finished = R"({"type":"RUN_FINISHED","threadId":"T","runId":"C","outcome":{"type":"success"}})";

TEST_CASE("ag_ui: a text run opens its message at the first token and closes it before RUN_FINISHED") {
  const auto out = encode({ev(1, event_type::status, R"({"status":"thinking"})"), ev(2, event_type::token, R"({"content":"Hi"})"),
                           ev(3, event_type::token, R"({"content":" there"})"),
                           ev(4, event_type::done, R"({"assistant_data":{"status":"complete"}})")});
  CHECK(out == line(1, started) + line(2, R"({"type":"TEXT_MESSAGE_START","messageId":"R-text-1","role":"assistant"})") +
                   line(2, R"({"type":"TEXT_MESSAGE_CONTENT","messageId":"R-text-1","delta":"Hi"})") +
                   line(3, R"({"type":"TEXT_MESSAGE_CONTENT","messageId":"R-text-1","delta":" there"})") +
                   line(4, R"({"type":"TEXT_MESSAGE_END","messageId":"R-text-1"})") + line(4, finished));
  CHECK(out.find('\r') == std::string::npos);
}

TEST_CASE("ag_ui: a tool call closes the text, belongs to that message, and the answer after its result is a new message") {
  const auto out = encode({ev(1, event_type::token, R"({"content":"Let me"})"),
                           ev(2, event_type::tool_call, R"({"id":"c1","name":"calculator","args":{"expression":"1+1"}})"),
                           ev(3, event_type::tool_result, R"({"tool_call_id":"c1","output":"2","exit_code":0})"),
                           ev(4, event_type::token, R"({"content":"2"})"),
                           ev(5, event_type::done, R"({"assistant_data":{"status":"complete"}})")});
  CHECK(out ==
        line(1, started) + line(1, R"({"type":"TEXT_MESSAGE_START","messageId":"R-text-1","role":"assistant"})") +
            line(1, R"({"type":"TEXT_MESSAGE_CONTENT","messageId":"R-text-1","delta":"Let me"})") +
            line(2, R"({"type":"TEXT_MESSAGE_END","messageId":"R-text-1"})") +
            line(2, R"({"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"calculator","parentMessageId":"R-text-1"})") +
            line(2, R"({"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{\"expression\":\"1+1\"}"})") +
            line(2, R"({"type":"TOOL_CALL_END","toolCallId":"c1"})") +
            line(3, R"({"type":"TOOL_CALL_RESULT","messageId":"R-tool-c1","toolCallId":"c1","content":"2","role":"tool"})") +
            line(4, R"({"type":"TEXT_MESSAGE_START","messageId":"R-text-2","role":"assistant"})") +
            line(4, R"({"type":"TEXT_MESSAGE_CONTENT","messageId":"R-text-2","delta":"2"})") +
            line(5, R"({"type":"TEXT_MESSAGE_END","messageId":"R-text-2"})") + line(5, finished));
}

TEST_CASE("ag_ui: tool calls with no text before them get an assistant message of their own") {
  const auto out = encode({ev(1, event_type::tool_call, R"({"id":"a","name":"x","args":{}})"),
                           ev(2, event_type::tool_call, R"({"id":"b","name":"y","args":{}})")});
  CHECK(out.find(R"("toolCallId":"a","toolCallName":"x","parentMessageId":"R-assistant-1")") != std::string::npos);
  CHECK(out.find(R"("toolCallId":"b","toolCallName":"y","parentMessageId":"R-assistant-1")") != std::string::npos);
}

TEST_CASE("ag_ui: reasoning is a span with one message, closed when the answer starts") {
  const auto out = encode({ev(1, event_type::reasoning, R"({"content":"hmm"})"), ev(2, event_type::token, R"({"content":"A"})")});
  CHECK(out == line(1, started) + line(1, R"({"type":"REASONING_START","messageId":"R-reasoning-1"})") +
                   line(1, R"({"type":"REASONING_MESSAGE_START","messageId":"R-reasoning-1","role":"reasoning"})") +
                   line(1, R"({"type":"REASONING_MESSAGE_CONTENT","messageId":"R-reasoning-1","delta":"hmm"})") +
                   line(2, R"({"type":"REASONING_MESSAGE_END","messageId":"R-reasoning-1"})") +
                   line(2, R"({"type":"REASONING_END","messageId":"R-reasoning-1"})") +
                   line(2, R"({"type":"TEXT_MESSAGE_START","messageId":"R-text-2","role":"assistant"})") +
                   line(2, R"({"type":"TEXT_MESSAGE_CONTENT","messageId":"R-text-2","delta":"A"})"));
}

TEST_CASE("ag_ui: a plan's steps start and finish in order; an open step is closed at the end") {
  const auto out = encode({ev(1, event_type::planning, R"({"todos":["a","b"]})"),
                           ev(2, event_type::step_complete, R"({"step_number":1,"total_steps":2,"description":"a"})"),
                           ev(3, event_type::done, R"({"assistant_data":{"status":"complete"}})")});
  CHECK(out == line(1, started) + line(1, R"({"type":"STEP_STARTED","stepName":"a"})") +
                   line(2, R"({"type":"STEP_FINISHED","stepName":"a"})") + line(2, R"({"type":"STEP_STARTED","stepName":"b"})") +
                   line(3, R"({"type":"STEP_FINISHED","stepName":"b"})") + line(3, finished));
}

TEST_CASE("ag_ui: usage rides on RUN_FINISHED as AG-UI's TokenUsage list") {
  const auto out = encode(
      {ev(1, event_type::usage, R"({"input_tokens":3,"output_tokens":4,"estimated_cost":0,"provider":"mock","model":"m"})"),
       ev(2, event_type::done, R"({"assistant_data":{"status":"complete"}})")});
  CHECK(
      out ==
      line(1, started) +
          line(
              2,
              R"({"type":"RUN_FINISHED","threadId":"T","runId":"C","outcome":{"type":"success"},"usage":[{"provider":"mock","model":"m","inputTokens":3,"outputTokens":4,"totalTokens":7}]})"));
}

TEST_CASE("ag_ui: a failed run ends with RUN_ERROR carrying our error's code and message, after closing the text") {
  const auto out = encode({ev(1, event_type::token, R"({"content":"x"})"),
                           ev(2, event_type::error, R"({"code":"mock_failure","message":"boom"})"),
                           ev(3, event_type::done, R"({"assistant_data":{"status":"error"}})")});
  CHECK(out == line(1, started) + line(1, R"({"type":"TEXT_MESSAGE_START","messageId":"R-text-1","role":"assistant"})") +
                   line(1, R"({"type":"TEXT_MESSAGE_CONTENT","messageId":"R-text-1","delta":"x"})") +
                   line(3, R"({"type":"TEXT_MESSAGE_END","messageId":"R-text-1"})") +
                   line(3, R"({"type":"RUN_ERROR","message":"boom","code":"mock_failure"})"));
}

TEST_CASE("ag_ui: an aborted run finishes with the cancelled outcome") {
  const auto out = encode({ev(1, event_type::done, R"({"assistant_data":{"status":"aborted"}})")});
  CHECK(out ==
        line(1, started) + line(1, R"({"type":"RUN_FINISHED","threadId":"T","runId":"C","outcome":{"type":"cancelled"}})"));
}

TEST_CASE("ag_ui: skipped: empty deltas, status, other runs' events, unnumbered frames, anything after the end") {
  ag_ui_encoder enc("T", "C", run);
  std::string out;
  enc.encode(ev(1, event_type::token, R"({"content":"y"})", "OTHER"), out);
  enc.encode(agw::core::make_reconnected_frame(0, 0, false, 0), out);
  CHECK(out.empty());
  enc.encode(ev(2, event_type::token, R"({"content":""})"), out);
  CHECK(out == line(2, started));  // the run starts; an empty delta opens no message
  enc.encode(ev(3, event_type::status, R"({"status":"thinking"})"), out);
  enc.encode(ev(4, event_type::done, R"({"assistant_data":{"status":"complete"}})"), out);
  CHECK(enc.finished());
  const auto at_end = out.size();
  enc.encode(ev(5, event_type::token, R"({"content":"late"})"), out);
  CHECK(out.size() == at_end);
  CHECK(out == line(2, started) + line(4, finished));
}

TEST_CASE("ag_ui: a newline in a delta stays inside its one data line") {
  const auto out = encode({ev(1, event_type::token, R"({"content":"a\nb"})")});
  CHECK(out.find(R"("delta":"a\nb")") != std::string::npos);
  for (std::size_t at = 0; (at = out.find('\n', at)) != std::string::npos; ++at) {
    const auto next = out.substr(at + 1, 4);
    CHECK((next.empty() || next == "id: " || next == "data" || next.front() == '\n'));
  }
}

}  // namespace
