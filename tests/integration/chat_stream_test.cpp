// The AI SDK's chat endpoints on the real binary: POST /sessions/{id}/chat answers the
// UI message stream (its head, LF-only frames with id: lines, [DONE] last), the same
// 409 as POST /messages while a run is live, GET /chat/stream resumes the live run from
// its start or answers 204 when idle, and bad bodies are 4xx that store nothing.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::runs;

namespace {

std::string chat_path(const std::string& sid) { return "/sessions/" + sid + "/chat"; }

// The body DefaultChatTransport sends for a new user message.
std::string chat_body(std::string_view text) {
  boost::json::object part{{"type", "text"}, {"text", text}};
  boost::json::object message{{"id", "m1"}, {"role", "user"}, {"parts", boost::json::array{part}}};
  return boost::json::serialize(
      boost::json::object{{"id", "chat1"}, {"messages", boost::json::array{message}}, {"trigger", "submit-message"}});
}

// The data: payloads of a UI message stream body, in order; checks every line's form.
std::vector<std::string> data_lines(const std::string& body) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < body.size()) {
    const auto end = body.find('\n', at);
    REQUIRE(end != std::string::npos);
    const std::string line = body.substr(at, end - at);
    INFO("line: " << line);
    CHECK((line.empty() || line.starts_with("id: ") || line.starts_with("data: ") || line == ": heartbeat"));
    if (line.starts_with("data: ")) out.push_back(line.substr(6));
    at = end + 1;
  }
  return out;
}

std::vector<std::string> chunk_types(const std::vector<std::string>& data) {
  std::vector<std::string> types;
  for (const auto& d : data) {
    if (d == "[DONE]") {
      types.push_back(d);
      continue;
    }
    auto v = boost::json::parse(d);
    types.emplace_back(v.at("type").as_string());
  }
  return types;
}

}  // namespace

TEST_CASE("chat: POST /chat answers the UI message stream, LF only, [DONE] last") {
  gateway_process gw;
  const std::string sid = create_session(gw.port());
  auto r = http_call(gw.port(), "POST", chat_path(sid), chat_body("hello there world"));
  INFO("body: " << r.body);
  REQUIRE(r.status == 200);
  CHECK(r.header("Content-Type") == "text/event-stream");
  CHECK(r.header("x-vercel-ai-ui-message-stream") == "v1");
  CHECK(r.header("X-Accel-Buffering") == "no");
  CHECK(r.header("Transfer-Encoding") == "chunked");
  CHECK(r.body.find('\r') == std::string::npos);
  CHECK(r.body.starts_with("id: 1\ndata: {\"type\":\"start\""));
  CHECK(r.body.ends_with("\n\ndata: [DONE]\n\n"));
  const auto types = chunk_types(data_lines(r.body));
  CHECK(types == std::vector<std::string>{"start", "start-step", "text-start", "text-delta", "text-delta", "text-delta",
                                          "text-end", "finish-step", "finish", "[DONE]"});
  // The same run, the same content as the contract's stream: the persisted answer.
  auto messages = get_messages(gw.port(), sid);
  REQUIRE(messages.size() == 2);
  CHECK(messages[0].at("content") == "hello there world");
  CHECK(messages[1].at("content") == "hello there world");
  CHECK(messages[1].at("role") == "user");
}

TEST_CASE("chat: a tool-calling run has the tool's input and output chunks") {
  gateway_process gw;
  const std::string sid =
      create_mock_session(gw.port(), R"({"tool_calls":[{"name":"calculator","args":{"expression":"2+3*4"}}]})");
  auto r = http_call(gw.port(), "POST", chat_path(sid), chat_body("compute"));
  INFO("body: " << r.body);
  REQUIRE(r.status == 200);
  const auto data = data_lines(r.body);
  const auto types = chunk_types(data);
  CHECK(std::count(types.begin(), types.end(), "tool-input-available") == 1);
  CHECK(std::count(types.begin(), types.end(), "tool-output-available") == 1);
  CHECK(r.body.find(R"("input":{"expression":"2+3*4"})") != std::string::npos);
  CHECK(r.body.find(R"("output":"14")") != std::string::npos);
  CHECK(types.back() == "[DONE]");
}

TEST_CASE("chat: 409 while a run is live, /chat/stream replays it from its start; 204 when idle") {
  gateway_process gw;
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":30,"tokens_per_second":20})");
  // Idle: nothing to resume.
  auto idle = http_call(gw.port(), "GET", chat_path(sid) + "/stream");
  CHECK(idle.status == 204);
  CHECK(idle.body.empty());

  sse_reader first(gw.port());
  first.send("POST", chat_path(sid), chat_body("go"), json_headers);
  REQUIRE(first.head.status == 200);

  auto conflict = http_call(gw.port(), "POST", chat_path(sid), chat_body("again"));
  check_error(conflict, 409, "run_in_progress");

  auto resumed = http_call(gw.port(), "GET", chat_path(sid) + "/stream");
  INFO("resumed: " << resumed.body);
  REQUIRE(resumed.status == 200);
  CHECK(resumed.header("x-vercel-ai-ui-message-stream") == "v1");
  REQUIRE(first.read_to_end(20s));
  // The resumed stream is the run's whole stream, byte for byte (from its start).
  CHECK(resumed.body == first.parser.body);
  CHECK(resumed.body.ends_with("data: [DONE]\n\n"));
  CHECK(http_call(gw.port(), "GET", chat_path(sid) + "/stream").status == 204);
  CHECK(get_messages(gw.port(), sid).size() == 2);  // the 409 stored nothing
}

TEST_CASE("chat: bad bodies are 4xx with the error body and store nothing") {
  gateway_process gw;
  const std::string sid = create_session(gw.port());
  const std::vector<std::string> bad = {
      "not json",
      "[]",
      R"({})",
      R"({"messages":[]})",
      R"({"messages":{}})",
      R"({"messages":[{"role":"assistant","parts":[{"type":"text","text":"hi"}]}]})",
      R"({"messages":[{"role":"user","parts":[{"type":"text","text":"   "}]}]})",
      R"({"messages":[{"role":"user","parts":[{"type":"text","text":5}]}]})",
      R"({"messages":[{"role":"user","parts":"hi"}]})",
      R"({"messages":[{"role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"explode"})",
      R"({"messages":[{"role":"user","parts":[{"type":"text","text":"hi"}]}],"id":7})",
  };
  for (const auto& body : bad) {
    INFO("body: " << body);
    check_error(http_call(gw.port(), "POST", chat_path(sid), body), 400, "bad_request");
  }
  auto wrong_type = http_call(gw.port(), "POST", chat_path(sid), chat_body("hi"), {{"Content-Type", "text/plain"}});
  check_error(wrong_type, 415, "unsupported_media_type");
  check_error(http_call(gw.port(), "POST", chat_path("no-such-session"), chat_body("hi")), 404, "not_found");
  CHECK(get_messages(gw.port(), sid).empty());
  CHECK(get_json(gw.port(), "/sessions/" + sid).at("run").is_null());
}

TEST_CASE("chat: an Idempotency-Key retry stores nothing and gets the same run's stream again") {
  gateway_process gw;
  const std::string sid = create_session(gw.port());
  const header_list headers{{"Content-Type", "application/json"}, {"Idempotency-Key", "chat-retry-1"}};
  auto first = http_call(gw.port(), "POST", chat_path(sid), chat_body("once only"), headers);
  REQUIRE(first.status == 200);
  auto again = http_call(gw.port(), "POST", chat_path(sid), chat_body("once only"), headers);
  REQUIRE(again.status == 200);
  CHECK(again.header("X-Run-Id") == first.header("X-Run-Id"));
  CHECK(again.body == first.body);  // the ended run's events replayed, encoded the same way
  CHECK(get_messages(gw.port(), sid).size() == 2);
  auto mismatch = http_call(gw.port(), "POST", chat_path(sid), chat_body("something else"), headers);
  check_error(mismatch, 422, "idempotency_mismatch");
}

TEST_CASE("chat: a /chat client, a resumed chat stream and a GET /events follower of one run see the same content") {
  gateway_process gw;
  const std::string sid = create_mock_session(
      gw.port(), R"({"tokens_per_second":100,"tool_calls":[{"name":"calculator","args":{"expression":"6*7"}}]})");
  sse_reader follower(gw.port());
  follower.send("GET", "/sessions/" + sid + "/events", "", {});
  REQUIRE(follower.head.status == 200);
  sse_reader client(gw.port());
  client.send("POST", chat_path(sid), chat_body("the same words for all"), json_headers);
  REQUIRE(client.head.status == 200);
  // A second chat reader of the same run, joining while it is live (one shared encoding).
  auto resumed = http_call(gw.port(), "GET", chat_path(sid) + "/stream");
  REQUIRE(resumed.status == 200);
  REQUIRE(client.read_to_end(20s));
  REQUIRE(follower.read_until([](const sse_parser& p) { return p.has_done(); }, 20s));
  CHECK(resumed.body == client.parser.body);

  std::string text;
  std::vector<std::int64_t> delta_ids, token_ids;
  const sse_frame *input = nullptr, *output = nullptr;
  std::set<std::int64_t> follower_ids;
  for (const auto& f : follower.parser.frames)
    if (f.id) follower_ids.insert(*f.id);
  for (const auto& f : client.parser.frames) {
    if (f.data_text == "[DONE]") continue;
    REQUIRE(f.id);
    CHECK_MESSAGE(follower_ids.count(*f.id) == 1, "chunk id " << *f.id);
    const auto type = f.field("type");
    if (type == "text-delta") {
      text += f.field("delta");
      delta_ids.push_back(*f.id);
    }
    if (type == "tool-input-available") input = &f;
    if (type == "tool-output-available") output = &f;
  }
  for (const auto* t : follower.parser.of_type("token")) token_ids.push_back(*t->id);
  CHECK(text == "the same words for all");
  CHECK(text == follower.parser.tokens());
  CHECK(delta_ids == token_ids);
  const auto* call = follower.parser.first("tool_call");
  const auto* result = follower.parser.first("tool_result");
  REQUIRE(call);
  REQUIRE(result);
  REQUIRE(input);
  REQUIRE(output);
  CHECK(input->field("toolCallId") == call->field("id"));
  CHECK(input->field("toolName") == "calculator");
  CHECK(input->obj().at("input") == call->obj().at("args"));
  CHECK(*input->id == *call->id);
  CHECK(output->field("output") == result->field("output"));
  CHECK(*output->id == *result->id);
}
