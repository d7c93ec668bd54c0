// POST /ag-ui/{session_id} and POST /ag-ui against the real binary: the AG-UI stream's
// headers and bytes (LF only, id + data lines), the run shared with the contract's
// endpoints (409 while live on either), and bad RunAgentInputs refused with nothing stored.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "tests/integration/providers_support.hpp"
#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/resume_support.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::runs;
namespace json = boost::json;

namespace {

std::string run_input(std::string_view text, std::string_view run_id = "client-run-1") {
  return boost::json::serialize(boost::json::object{
      {"threadId", nullptr},
      {"runId", run_id},
      {"messages", boost::json::array{boost::json::object{{"id", "u1"}, {"role", "user"}, {"content", text}}}},
      {"tools", boost::json::array{}},
      {"context", boost::json::array{}},
      {"state", boost::json::object{}},
      {"forwardedProps", boost::json::object{}}});
}

// The client's tool, as RunAgentInput.tools declares it.
json::array confirm_tool() {
  return json::array{json::object{
      {"name", "confirm"},
      {"description", "asks the user"},
      {"parameters", json::object{{"type", "object"}, {"properties", json::object{{"question", {{"type", "string"}}}}}}}}};
}

std::string input_with(json::array messages, std::string_view run_id, json::array tools = confirm_tool()) {
  return json::serialize(json::object{{"runId", run_id},
                                      {"messages", std::move(messages)},
                                      {"tools", std::move(tools)},
                                      {"context", json::array{}},
                                      {"state", json::object{}}});
}

json::object user_msg(std::string_view text) { return {{"id", "u1"}, {"role", "user"}, {"content", text}}; }
json::object tool_msg(std::string_view call_id, std::string_view content) {
  return {{"id", "t1"}, {"role", "tool"}, {"toolCallId", call_id}, {"content", content}};
}

// The AG-UI events of a body, parsed.
std::vector<json::object> ag_ui_events(const std::string& body) {
  std::vector<json::object> out;
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const auto end = body.find('\n', at);
    out.push_back(json::parse(body.substr(at + 6, end - at - 6)).as_object());
    at = end;
  }
  return out;
}

// The session's messages, oldest first (GET /messages pages newest first).
std::vector<json::value> oldest_first(const json::array& newest_first) { return {newest_first.rbegin(), newest_first.rend()}; }

std::vector<std::string> types_of(const std::vector<json::object>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.emplace_back(e.at("type").as_string());
  return out;
}

// The AG-UI events of a body: each `data:` line's JSON type, and every `id:` value.
struct ag_ui_body {
  std::vector<std::string> types;
  std::vector<std::int64_t> ids;
};

ag_ui_body read_ag_ui(const std::string& body) {
  ag_ui_body out;
  std::size_t at = 0;
  while (at < body.size()) {
    const auto end = body.find('\n', at);
    REQUIRE(end != std::string::npos);
    const auto line = body.substr(at, end - at);
    at = end + 1;
    if (line.rfind("data: ", 0) == 0)
      out.types.emplace_back(boost::json::parse(line.substr(6)).at("type").as_string());
    else if (line.rfind("id: ", 0) == 0)
      out.ids.push_back(std::stoll(line.substr(4)));
    else
      CHECK_MESSAGE(line.empty(), "unexpected line: " << line);
  }
  return out;
}

}  // namespace

TEST_CASE("ag_ui: a run's stream: headers, LF only, an id line per event, RUN_STARTED to RUN_FINISHED") {
  gateway_process gw;
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":4})");
  auto reply = http_call(gw.port(), "POST", "/ag-ui/" + sid, run_input("hello"));
  INFO(reply.body);
  REQUIRE(reply.status == 200);
  CHECK(reply.header("Content-Type") == "text/event-stream");
  CHECK(reply.header("Cache-Control") == "no-cache");
  CHECK(reply.header("X-Accel-Buffering") == "no");
  CHECK(!reply.header("X-Run-Id").empty());
  CHECK(reply.body.find('\r') == std::string::npos);
  CHECK(reply.body.rfind("retry:", 0) == std::string::npos);
  const auto events = read_ag_ui(reply.body);
  REQUIRE(events.types.size() >= 4);
  CHECK(events.types.front() == "RUN_STARTED");
  CHECK(events.types.back() == "RUN_FINISHED");
  CHECK(events.ids.size() == events.types.size());
  // Ids are the session's event ids: never going back, ending at the run's done.
  for (std::size_t i = 1; i < events.ids.size(); ++i) CHECK(events.ids[i] >= events.ids[i - 1]);
  CHECK(events.ids.back() == get_session(gw.port(), sid).at("last_event_id").as_int64());
  // The same run as the contract's: the user message and the answer are the session's.
  CHECK(get_messages(gw.port(), sid).size() == 2);
}

TEST_CASE("ag_ui: 409 while a run is live, from either endpoint, storing nothing") {
  gateway_process gw;
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":200,"tokens_per_second":50})");
  sse_reader live(gw.port());
  live.send("POST", "/ag-ui/" + sid, run_input("long one"), json_headers);
  REQUIRE(live.head.status == 200);
  const std::string run_id = live.head.header("X-Run-Id");

  auto again = http_call(gw.port(), "POST", "/ag-ui/" + sid, run_input("second", "client-run-2"));
  check_error(again.status, again.header("Content-Type"), again.body, 409, "run_in_progress");
  CHECK(str(again.json().at("error").at("run_id")) == run_id);
  auto contract = http_call(gw.port(), "POST", messages_path(sid), message_body("third"));
  CHECK(contract.status == 409);
  CHECK(get_messages(gw.port(), sid).size() == 1);  // the live run's user message only

  // The abort rule is the contract's: the AG-UI stream ends with the cancelled outcome.
  auto abort = http_call(gw.port(), "POST", "/sessions/" + sid + "/abort", "{}");
  CHECK(abort.status == 200);
  REQUIRE(live.read_to_end(10s));
  CHECK(live.parser.body.find(R"("type":"RUN_FINISHED")") != std::string::npos);
  CHECK(live.parser.body.find(R"("outcome":{"type":"cancelled"})") != std::string::npos);
}

TEST_CASE("ag_ui: the same runId again attaches to its run instead of starting another") {
  gateway_process gw;
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":3})");
  auto first = http_call(gw.port(), "POST", "/ag-ui/" + sid, run_input("once", "same-run"));
  REQUIRE(first.status == 200);
  auto retry = http_call(gw.port(), "POST", "/ag-ui/" + sid, run_input("once", "same-run"));
  REQUIRE(retry.status == 200);
  CHECK(retry.header("X-Run-Id") == first.header("X-Run-Id"));
  CHECK(retry.body == first.body);
  CHECK(get_messages(gw.port(), sid).size() == 2);
}

TEST_CASE("ag_ui: bad RunAgentInputs are 4xx with the contract's error body and store nothing") {
  gateway_process gw;
  const std::string sid = create_session(gw.port());
  const auto before = get_session(gw.port(), sid);
  const std::string path = "/ag-ui/" + sid;
  struct bad_case {
    std::string body;
    int status;
    std::string code;
  };
  const std::vector<bad_case> cases{
      {"not json", 400, "bad_request"},
      {"[]", 400, "bad_request"},
      {R"({"threadId":"x"})", 400, "bad_request"},  // no messages
      {R"({"messages":[]})", 400, "bad_request"},   // no user message
      {R"({"messages":[{"id":"a","role":"assistant","content":"hi"}]})", 400, "bad_request"},
      {R"({"messages":[{"id":"a","role":"user","content":"  "}]})", 400, "bad_request"},
      {R"({"messages":[{"id":"a","content":"no role"}]})", 400, "bad_request"},
      {R"({"messages":[{"id":"a","role":"user","content":"x"}],"tools":{}})", 400, "bad_request"},
      {R"({"messages":[{"id":"a","role":"user","content":"x"}],"threadId":"00000000-0000-4000-8000-000000000000"})", 400,
       "bad_request"},  // a threadId that is not the path's session
      // A tool result for no pending call of the session.
      {R"({"messages":[{"id":"a","role":"tool","toolCallId":"c","content":"x"}]})", 400, "bad_request"},
      {R"({"messages":[{"id":"a","role":"tool","content":"x"}]})", 400, "bad_request"},  // no toolCallId
      {R"({"messages":[{"id":"a","role":"user","content":"x"}],"tools":[{"description":"no name"}]})", 400, "bad_request"},
      {R"({"messages":[{"id":"a","role":"user","content":"x"}],"tools":[{"name":"has space"}]})", 400, "bad_request"},
      {R"({"messages":[{"id":"a","role":"user","content":"x"}],"tools":[{"name":"t"},{"name":"t"}]})", 400, "bad_request"},
      {R"({"messages":[{"id":"a","role":"user","content":"x"}],"tools":[{"name":"t","parameters":[]}]})", 400, "bad_request"},
  };
  for (const auto& c : cases) {
    INFO("body: " << c.body);
    auto r = http_call(gw.port(), "POST", path, c.body);
    check_error(r.status, r.header("Content-Type"), r.body, c.status, c.code);
  }
  auto wrong_type = http_call(gw.port(), "POST", path, run_input("x"), {{"Content-Type", "text/plain"}});
  check_error(wrong_type.status, wrong_type.header("Content-Type"), wrong_type.body, 415, "unsupported_media_type");
  auto unknown = http_call(gw.port(), "POST", "/ag-ui/00000000-0000-4000-8000-000000000000", run_input("x"));
  check_error(unknown.status, unknown.header("Content-Type"), unknown.body, 404, "not_found");
  // POST /ag-ui: the threadId is the session id, so it must be a UUID; none is made.
  auto not_uuid = http_call(gw.port(), "POST", "/ag-ui", R"({"threadId":"thread-1","messages":[{"role":"user","content":"x"}]})");
  check_error(not_uuid.status, not_uuid.header("Content-Type"), not_uuid.body, 400, "bad_request");
  auto no_thread = http_call(gw.port(), "POST", "/ag-ui", R"({"messages":[{"role":"user","content":"x"}]})");
  check_error(no_thread.status, no_thread.header("Content-Type"), no_thread.body, 400, "bad_request");
  // Tool results for a thread that does not exist: refused before the session is made.
  auto orphan_results = http_call(
      gw.port(), "POST", "/ag-ui",
      R"({"threadId":"00000000-0000-4000-8000-0000000000aa","messages":[{"id":"t1","role":"tool","toolCallId":"call_1","content":"yes"}]})");
  check_error(orphan_results.status, orphan_results.header("Content-Type"), orphan_results.body, 400, "bad_request");

  const auto after = get_session(gw.port(), sid);
  CHECK(after.at("message_count") == before.at("message_count"));
  CHECK(after.at("last_event_id") == before.at("last_event_id"));
  CHECK(get_json(gw.port(), "/sessions").at("total") == 1);
}

TEST_CASE("ag_ui: a client tool (mock): the run ends at TOOL_CALL_END, the tool message continues it") {
  gateway_process gw;
  const std::string sid = create_mock_session(gw.port(), R"({"tool_calls":[{"name":"confirm","args":{"question":"go on?"}}]})");
  auto first = http_call(gw.port(), "POST", "/ag-ui/" + sid, input_with({user_msg("ask first")}, "r1"));
  INFO(first.body);
  REQUIRE(first.status == 200);
  const auto events = ag_ui_events(first.body);
  const auto types = types_of(events);
  const std::vector<std::string> tail(types.end() - 4, types.end());
  CHECK(tail == std::vector<std::string>{"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"});
  CHECK(std::count(types.begin(), types.end(), "TOOL_CALL_RESULT") == 0);
  const auto call_id = std::string(events[types.size() - 4].at("toolCallId").as_string());
  // The answer is the assistant turn that asks for the call; it is pending.
  auto messages = oldest_first(get_messages(gw.port(), sid));
  REQUIRE(messages.size() == 2);
  CHECK(messages.back().at("role") == "assistant");
  CHECK(messages.back().at("tool_calls").as_array().at(0).at("id") == call_id.c_str());
  CHECK(messages.back().at("tool_calls").as_array().at(0).at("name") == "confirm");

  auto second =
      http_call(gw.port(), "POST", "/ag-ui/" + sid, input_with({user_msg("ask first"), tool_msg(call_id, "yes")}, "r2"));
  REQUIRE(second.status == 200);
  const auto more = types_of(ag_ui_events(second.body));
  CHECK(std::count(more.begin(), more.end(), "TOOL_CALL_START") == 0);
  CHECK(more.back() == "RUN_FINISHED");
  messages = oldest_first(get_messages(gw.port(), sid));
  REQUIRE(messages.size() == 4);
  CHECK(messages[2].at("role") == "tool");
  CHECK(messages[2].at("tool_call_id") == call_id.c_str());
  CHECK(messages[2].at("content") == "yes");
  CHECK(messages[3].at("content") == "ask first");

  // Answered: the same result again is refused and stores nothing.
  auto again = http_call(gw.port(), "POST", "/ag-ui/" + sid, input_with({tool_msg(call_id, "yes")}, "r3"));
  check_error(again.status, again.header("Content-Type"), again.body, 400, "bad_request");
  CHECK(get_messages(gw.port(), sid).size() == 4);
  // A run that does not offer the tool: the mock's call of it is an unknown tool, as before.
  auto plain = http_call(gw.port(), "POST", "/ag-ui/" + sid, input_with({user_msg("no tools")}, "r4", json::array{}));
  CHECK(plain.body.find(R"("code":"unknown_tool")") != std::string::npos);
}

TEST_CASE("ag_ui: a message queued during a run that hands a call to the client waits for the client's result") {
  gateway_process gw;
  const std::string sid =
      create_mock_session(gw.port(), R"({"think_ms":1000,"tool_calls":[{"name":"confirm","args":{"question":"go on?"}}]})");
  auto first = std::async(std::launch::async, [&] {
    return http_call(gw.port(), "POST", "/ag-ui/" + sid, input_with({user_msg("ask first")}, "r1"));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  boost::json::object body{{"content", "queued kiwi"}, {"multitask", "enqueue"}};
  auto queued = http_call(gw.port(), "POST", messages_path(sid), boost::json::serialize(body));
  INFO(queued.body);
  REQUIRE(queued.status == 202);
  const auto handed = first.get();
  REQUIRE(handed.status == 200);
  const auto events = ag_ui_events(handed.body);
  const auto types = types_of(events);
  REQUIRE(types.size() >= 4);
  const auto call_id = std::string(events[types.size() - 4].at("toolCallId").as_string());
  // The queue's run found the client's call pending: nothing ran, nothing was stored.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(resume::metric(gw.port(), "gateway_runs_started_total") == 1);
  CHECK(get_messages(gw.port(), sid).size() == 2);

  // The result fits (no queued message came between the call and it); that run's end
  // starts the queue's run.
  auto second =
      http_call(gw.port(), "POST", "/ag-ui/" + sid, input_with({user_msg("ask first"), tool_msg(call_id, "yes")}, "r2"));
  INFO(second.body);
  REQUIRE(second.status == 200);
  for (int i = 0; i < 100 && resume::metric(gw.port(), "gateway_runs_started_total") < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(resume::metric(gw.port(), "gateway_runs_started_total") == 3);
  const auto messages = oldest_first(get_messages(gw.port(), sid));
  REQUIRE(messages.size() >= 5);
  CHECK(messages[2].at("role") == "tool");
  CHECK(messages[3].at("role") == "assistant");
  CHECK(messages[4].at("content") == "queued kiwi");
}

TEST_CASE("ag_ui: a client tool (openai): offered beside the built-in ones, handed back, answered, or abandoned") {
  using namespace agw::test::providers;
  fake_upstream_process fake;
  gateway_process gw(openai_env(fake));
  const auto sid = openai_session(gw.port(), "client_tool");
  auto first = http_call(gw.port(), "POST", "/ag-ui/" + sid, input_with({user_msg("ask first")}, "o1"));
  INFO(first.body);
  REQUIRE(first.status == 200);
  const auto types = types_of(ag_ui_events(first.body));
  CHECK(std::count(types.begin(), types.end(), "TOOL_CALL_END") == 1);
  CHECK(std::count(types.begin(), types.end(), "TOOL_CALL_RESULT") == 0);
  CHECK(types.back() == "RUN_FINISHED");
  auto requests = upstream_requests(fake);
  REQUIRE(requests.size() == 1);
  std::vector<std::string> declared;
  for (const auto& t : requests[0].at("body").at("tools").as_array())
    declared.emplace_back(t.at("function").at("name").as_string());
  CHECK(declared == std::vector<std::string>{"calculator", "current_time", "confirm"});

  auto second =
      http_call(gw.port(), "POST", "/ag-ui/" + sid, input_with({user_msg("ask first"), tool_msg("call_client_1", "yes")}, "o2"));
  REQUIRE(second.status == 200);
  CHECK(second.body.find(R"("delta":"results:")") != std::string::npos);
  requests = upstream_requests(fake);
  REQUIRE(requests.size() == 2);
  const auto& sent = messages_sent(requests[1]);
  REQUIRE(sent.size() == 3);
  CHECK(sent[1].at("tool_calls").at(0).at("id") == "call_client_1");
  CHECK(sent[2].at("role") == "tool");
  CHECK(sent[2].at("content") == "yes");

  // Pending, then a plain message instead of the result: the call is abandoned, and the
  // model is told so (a placeholder result), since the API refuses an unanswered call.
  auto third = http_call(gw.port(), "POST", "/ag-ui/" + sid, input_with({user_msg("again")}, "o3"));
  REQUIRE(third.status == 200);
  auto plain = runs::run_message(gw.port(), sid, "never mind");
  requests = upstream_requests(fake);
  REQUIRE(requests.size() >= 4);  // (then the fake calls `confirm` again: not offered by /messages)
  CHECK(plain->parser.count("done") == 1);
  const auto& last = messages_sent(requests[3]);
  REQUIRE(last.size() == 8);
  CHECK(last[5].at("tool_calls").at(0).at("id") == "call_client_1");
  CHECK(last[6].at("role") == "tool");
  CHECK(last[6].at("tool_call_id") == "call_client_1");
  CHECK(std::string(last[6].at("content").as_string()).find("no result") != std::string::npos);
  CHECK(last[7].at("role") == "user");
  CHECK(last[7].at("content") == "never mind");
}

TEST_CASE("ag_ui: an AG-UI client and a GET /events follower of one run see the same content and event ids") {
  gateway_process gw;
  const std::string sid = create_mock_session(
      gw.port(), R"({"tokens_per_second":100,"tool_calls":[{"name":"calculator","args":{"expression":"6*7"}}]})");
  sse_reader follower(gw.port());
  follower.send("GET", "/sessions/" + sid + "/events", "", {});
  REQUIRE(follower.head.status == 200);
  sse_reader client(gw.port());
  client.send("POST", "/ag-ui/" + sid, input_with({user_msg("the same words for both")}, "same-1", json::array{}), json_headers);
  REQUIRE(client.head.status == 200);
  REQUIRE(client.read_to_end(20s));
  REQUIRE(follower.read_until([](const sse_parser& p) { return p.has_done(); }, 20s));

  // Text: the deltas are the tokens, each AG-UI content event carrying its token's id.
  std::string text;
  std::vector<std::int64_t> text_ids, token_ids;
  std::map<std::int64_t, std::string> by_id;  // each AG-UI event's type by the session event it came from
  for (const auto& f : client.parser.frames) {
    REQUIRE(f.id);
    const auto type = f.field("type");
    if (type == "TEXT_MESSAGE_CONTENT") {
      text += f.field("delta");
      text_ids.push_back(*f.id);
    }
    by_id[*f.id] += type + " ";
  }
  for (const auto* t : follower.parser.of_type("token")) token_ids.push_back(*t->id);
  CHECK(text == "the same words for both");
  CHECK(text == follower.parser.tokens());
  CHECK(text_ids == token_ids);

  // The tool call and its result: the same id, name, arguments and output.
  const auto* call = follower.parser.first("tool_call");
  const auto* result = follower.parser.first("tool_result");
  REQUIRE(call);
  REQUIRE(result);
  const sse_frame *start = nullptr, *args = nullptr, *tool_result = nullptr;
  for (const auto& f : client.parser.frames) {
    if (f.field("type") == "TOOL_CALL_START") start = &f;
    if (f.field("type") == "TOOL_CALL_ARGS") args = &f;
    if (f.field("type") == "TOOL_CALL_RESULT") tool_result = &f;
  }
  REQUIRE(start);
  REQUIRE(args);
  REQUIRE(tool_result);
  CHECK(start->field("toolCallId") == call->field("id"));
  CHECK(start->field("toolCallName") == "calculator");
  CHECK(*start->id == *call->id);
  CHECK(json::parse(args->field("delta")) == call->obj().at("args"));
  CHECK(tool_result->field("content") == result->field("output"));
  CHECK(tool_result->field("content") == "42");
  CHECK(*tool_result->id == *result->id);

  // Ids: every AG-UI id is one of the run's session events; both end at its done.
  std::set<std::int64_t> follower_ids;
  for (const auto& f : follower.parser.frames)
    if (f.id) follower_ids.insert(*f.id);
  for (const auto& [id, types] : by_id) CHECK_MESSAGE(follower_ids.count(id) == 1, id << ": " << types);
  CHECK(client.parser.last_id() == *follower.parser.last("done")->id);
}
