// POST /ag-ui/{session_id} and POST /ag-ui against the real binary: the AG-UI stream's
// headers and bytes (LF only, id + data lines), the run shared with the contract's
// endpoints (409 while live on either), and bad RunAgentInputs refused with nothing stored.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::runs;

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
      {R"({"messages":[{"id":"a","role":"tool","toolCallId":"c","content":"x"}]})", 400, "bad_request"},
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

  const auto after = get_session(gw.port(), sid);
  CHECK(after.at("message_count") == before.at("message_count"));
  CHECK(after.at("last_event_id") == before.at("last_event_id"));
  CHECK(get_json(gw.port(), "/sessions").at("total") == 1);
}
