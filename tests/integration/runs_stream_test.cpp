// "Runs stream as SSE": POST /sessions/{id}/messages answers with the run's
// events, checked byte by byte (HTTP head, chunked framing, SSE frames), the
// event order of plain, tool-calling and failing runs, heartbeats, and the
// session's one id sequence across runs.
#include <doctest/doctest.h>

#include <set>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::runs;

namespace {

// The assistant message the contract describes, as carried by done.
void check_message_shape(const boost::json::object& m) {
  INFO("message: " << boost::json::serialize(m));
  for (const char* key : {"id", "session_id", "role", "content", "tool_calls", "tool_call_id", "token_count", "model_used",
                          "parent_id", "status", "created_at"}) {
    INFO("field " << key);
    CHECK(m.contains(key));
  }
  CHECK(is_uuid(m.at("id").as_string()));
  CHECK(m.at("tool_calls").is_array());
  CHECK(m.at("created_at").is_string());
}

}  // namespace

TEST_CASE("runs: one stream, byte by byte") {
  gateway_process gw;
  const std::string sid = create_session(gw.port());
  auto r = start_message(gw.port(), sid, "hello there world");

  // --- the head ---
  INFO("head: " << r->head_text);
  CHECK(r->status_line() == "HTTP/1.1 200 OK");
  REQUIRE(r->head.status == 200);
  CHECK(r->head.header("Content-Type") == "text/event-stream");
  CHECK(r->head.header("Cache-Control") == "no-cache");
  CHECK(r->head.header("X-Accel-Buffering") == "no");
  CHECK(r->head.header("Content-Location") == "/sessions/" + sid + "/events");
  CHECK(r->head.header("Transfer-Encoding") == "chunked");
  CHECK(r->head.header("Content-Length").empty());
  const std::string run_id = r->head.header("X-Run-Id");
  CHECK(is_uuid(run_id));

  // --- the body ---
  REQUIRE(r->read_to_end(20s));
  check_run_stream(*r, run_id);
  const auto& body = r->parser.body;
  INFO("body: " << body);
  CHECK(body.starts_with("retry: 3000\nid: 1\nevent: status\ndata: {"));
  CHECK(r->parser.retry == "3000");
  CHECK(r->parser.heartbeat_at.empty());  // nothing was idle for 15 s
  // The whole body is exactly the retry line and the frames, nothing else.
  std::string rebuilt = "retry: 3000\n";
  for (const auto& f : r->parser.frames) rebuilt += f.raw;
  CHECK(body == rebuilt);

  const auto& frames = r->parser.frames;
  CHECK(r->parser.event_types() == std::vector<std::string>{"status", "token", "token", "token", "usage", "done"});
  REQUIRE(frames.size() == 6);
  for (std::size_t i = 0; i < frames.size(); ++i) CHECK(*frames[i].id == static_cast<std::int64_t>(i + 1));
  CHECK(frames[0].data == boost::json::parse(R"({"run_id":")" + run_id + R"(","source":"ai_agent","status":"thinking"})"));
  CHECK(frames[1].data == boost::json::parse(R"({"run_id":")" + run_id + R"(","source":"ai_agent","content":"hello"})"));
  CHECK(frames[2].field("content") == " there");
  CHECK(frames[3].field("content") == " world");
  for (int i = 1; i <= 3; ++i) CHECK(frames[i].obj().size() == 3);  // run_id, source, content

  const auto& usage = frames[4].obj();
  INFO("usage: " << frames[4].data_text);
  for (const char* key : {"input_tokens", "output_tokens", "estimated_cost", "provider", "model"}) {
    INFO("usage field " << key);
    CHECK(usage.contains(key));
  }
  CHECK(usage.at("input_tokens").is_int64());
  CHECK(usage.at("output_tokens") == 3);
  CHECK(usage.at("estimated_cost").is_number());
  CHECK(usage.at("provider") == "mock");
  CHECK(usage.at("model").is_string());

  const auto& done = frames[5].obj();
  REQUIRE(done.contains("assistant_data"));
  REQUIRE(done.at("assistant_data").is_object());
  const auto& answer = done.at("assistant_data").as_object();
  check_message_shape(answer);
  CHECK(answer.at("role") == "assistant");
  CHECK(answer.at("status") == "complete");
  CHECK(answer.at("session_id") == jstr(sid));
  CHECK(answer.at("content") == jstr(r->parser.tokens()));
  CHECK(answer.at("content") == "hello there world");
  CHECK(answer.at("token_count") == 3);

  // --- what was persisted ---
  auto messages = get_messages(gw.port(), sid);
  REQUIRE(messages.size() == 2);
  INFO("messages: " << boost::json::serialize(messages));
  CHECK(messages[0].at("id") == answer.at("id"));
  CHECK(messages[0].at("content") == answer.at("content"));
  CHECK(messages[0] == boost::json::value(answer));  // done carries the persisted message itself
  const auto& user = messages[1].as_object();
  check_message_shape(user);
  CHECK(user.at("role") == "user");
  CHECK(user.at("content") == "hello there world");
  CHECK(answer.at("parent_id") == user.at("id"));

  auto s = get_session(gw.port(), sid);
  CHECK(s.at("message_count") == 2);
  CHECK(s.at("last_event_id") == 6);
  CHECK(s.at("run").is_null());
}

TEST_CASE("runs: the retry line follows GATEWAY_SSE_RETRY_INTERVAL") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_SSE_RETRY_INTERVAL", "1500"}});
  const std::string sid = create_session(gw.port());
  auto r = run_message(gw.port(), sid, "short");
  CHECK(r->parser.body.starts_with("retry: 1500\nid: 1\nevent: status\n"));
  check_run_stream(*r, r->head.header("X-Run-Id"));
}

TEST_CASE("runs: tokens reach the client as they are produced") {
  gateway_process gw;
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":5,"tokens_per_second":10})");
  auto r = start_message(gw.port(), sid, "pace");
  REQUIRE(r->head.status == 200);
  // The first token is there long before the run can end (0.4 s of pacing).
  const auto started = clock_type::now();
  REQUIRE(r->read_until([](const sse_parser& p) { return p.count("token") >= 1; }, 5s));
  CHECK(!r->parser.has_done());
  REQUIRE(r->read_to_end(10s));
  check_run_stream(*r, r->head.header("X-Run-Id"));
  auto tokens = r->parser.of_type("token");
  REQUIRE(tokens.size() == 5);
  // Tokens arrive spread over the run, not in one burst at its end.
  const auto spread = std::chrono::duration_cast<std::chrono::milliseconds>(tokens[4]->received - tokens[0]->received);
  CHECK(spread.count() >= 300);
  CHECK(r->decoder.sizes.size() >= 5);
  CHECK(clock_type::now() - started < 5s);
  CHECK(r->parser.tokens() == "tok0 tok1 tok2 tok3 tok4");
}

TEST_CASE("runs: ids go on by one across runs of a session") {
  gateway_process gw;
  const std::string sid = create_session(gw.port());
  auto first = run_message(gw.port(), sid, "one two");
  auto second = run_message(gw.port(), sid, "three four five");
  const std::string run1 = first->head.header("X-Run-Id");
  const std::string run2 = second->head.header("X-Run-Id");
  CHECK(run1 != run2);
  check_run_stream(*first, run1);
  check_run_stream(*second, run2);
  REQUIRE(!first->parser.frames.empty());
  REQUIRE(!second->parser.frames.empty());
  CHECK(*first->parser.frames.front().id == 1);
  CHECK(*second->parser.frames.front().id == first->parser.last_id() + 1);
  CHECK(second->parser.tokens() == "three four five");

  auto s = get_session(gw.port(), sid);
  CHECK(s.at("last_event_id") == second->parser.last_id());
  CHECK(s.at("message_count") == 4);

  // A second session has its own sequence from 1.
  const std::string other = create_session(gw.port());
  auto third = run_message(gw.port(), other, "x");
  CHECK(*third->parser.frames.front().id == 1);
  CHECK(get_session(gw.port(), sid).at("last_event_id") == second->parser.last_id());
}

TEST_CASE("runs: heartbeats keep a silent run's stream alive") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_SSE_HEARTBEAT_INTERVAL", "0.2"}});
  const std::string sid = create_mock_session(gw.port(), R"({"think_ms":700})");
  auto r = run_message(gw.port(), sid, "slow to start but complete");
  const std::string run_id = r->head.header("X-Run-Id");
  check_run_stream(*r, run_id);
  const auto& p = r->parser;
  INFO("body: " << p.body);
  std::size_t first_token = p.frames.size();
  for (std::size_t i = 0; i < p.frames.size(); ++i)
    if (p.frames[i].event == "token") {
      first_token = i;
      break;
    }
  REQUIRE(first_token < p.frames.size());
  std::size_t before_token = 0;
  for (auto at : p.heartbeat_at)
    if (at <= first_token) ++before_token;
  CHECK(before_token >= 2);
  // A heartbeat is one comment line: never followed by a blank line of its own.
  CHECK(p.body.find(": heartbeat\n\n") == std::string::npos);
  CHECK(p.body.find(": heartbeat\n") != std::string::npos);
  CHECK(p.tokens() == "slow to start but complete");
  CHECK(p.frames.back().event == "done");
  CHECK(p.frames.back().obj().at("assistant_data").at("status") == "complete");
  CHECK(p.frames.back().obj().at("assistant_data").at("content") == "slow to start but complete");
}

TEST_CASE("runs: a tool call streams tool_call and tool_result") {
  gateway_process gw;
  const std::string sid =
      create_mock_session(gw.port(), R"({"tool_calls":[{"name":"calculator","args":{"expression":"2+3*4"}}]})");
  auto r = run_message(gw.port(), sid, "what is it");
  const std::string run_id = r->head.header("X-Run-Id");
  check_run_stream(*r, run_id);
  const auto& p = r->parser;
  INFO("body: " << p.body);
  REQUIRE(p.count("tool_call") == 1);
  REQUIRE(p.count("tool_result") == 1);
  const auto& call = p.first("tool_call")->obj();
  const auto& result = p.first("tool_result")->obj();
  CHECK(call.size() == 5);  // run_id, source, id, name, args
  REQUIRE(call.contains("id"));
  REQUIRE(call.at("id").is_string());
  CHECK(!call.at("id").as_string().empty());
  CHECK(call.at("name") == "calculator");
  CHECK(call.at("args") == boost::json::parse(R"({"expression":"2+3*4"})"));
  CHECK(result.at("tool_call_id") == call.at("id"));
  CHECK(result.at("output") == "14");
  CHECK(result.at("exit_code") == 0);
  // tool_call before tool_result before the first token; the answer still completes.
  auto index_of = [&](const sse_frame* f) { return f - p.frames.data(); };
  CHECK(index_of(p.first("tool_call")) < index_of(p.first("tool_result")));
  REQUIRE(p.first("token") != nullptr);
  CHECK(index_of(p.first("tool_result")) < index_of(p.first("token")));
  CHECK(p.count("error") == 0);
  const auto& answer = p.frames.back().obj().at("assistant_data").as_object();
  CHECK(answer.at("status") == "complete");
  CHECK(answer.at("content") == "what is it");

  // The conversation: user, the assistant turn asking for the tool, the tool's answer, the answer.
  auto messages = get_messages(gw.port(), sid);
  INFO("messages: " << boost::json::serialize(messages));
  REQUIRE(messages.size() == 4);
  CHECK(messages[0] == boost::json::value(answer));
  const auto& tool = messages[1].as_object();
  CHECK(tool.at("role") == "tool");
  CHECK(tool.at("content") == "14");
  CHECK(tool.at("tool_call_id") == call.at("id"));
  const auto& asked = messages[2].as_object();
  CHECK(asked.at("role") == "assistant");
  REQUIRE(asked.at("tool_calls").is_array());
  REQUIRE(asked.at("tool_calls").as_array().size() == 1);
  const auto& listed = asked.at("tool_calls").as_array()[0].as_object();
  CHECK(listed.at("id") == call.at("id"));
  CHECK(listed.at("name") == "calculator");
  CHECK(listed.at("args") == call.at("args"));
  CHECK(messages[3].at("role") == "user");
  CHECK(get_session(gw.port(), sid).at("message_count") == 4);
}

TEST_CASE("runs: a failing tool ends the run with error, and the session goes on") {
  gateway_process gw;
  const std::string sid = create_mock_session(gw.port(), R"({"tool_calls":[{"name":"calculator","args":{"expression":"1/0"}}]})");
  auto r = run_message(gw.port(), sid, "divide");
  const std::string run_id = r->head.header("X-Run-Id");
  check_run_stream(*r, run_id);
  const auto& p = r->parser;
  INFO("body: " << p.body);
  REQUIRE(p.count("tool_result") == 1);
  const auto& result = p.first("tool_result")->obj();
  CHECK(result.at("exit_code") == 1);
  CHECK(result.at("output").is_string());
  REQUIRE(p.count("error") == 1);
  const auto& error = p.first("error")->obj();
  CHECK(error.at("code").is_string());
  CHECK(!error.at("code").as_string().empty());
  CHECK(error.at("message").is_string());
  auto index_of = [&](const sse_frame* f) { return f - p.frames.data(); };
  CHECK(index_of(p.first("tool_result")) < index_of(p.first("error")));
  CHECK(p.frames.back().event == "done");
  const auto& answer = p.frames.back().obj().at("assistant_data").as_object();
  CHECK(answer.at("status") == "error");
  CHECK(answer.at("content") == jstr(p.tokens()));
  auto messages = get_messages(gw.port(), sid);
  REQUIRE(!messages.empty());
  CHECK(messages[0] == boost::json::value(answer));

  // The next message is accepted at once: the failed run is over.
  auto next = run_message(gw.port(), sid, "again");
  check_run_stream(*next, next->head.header("X-Run-Id"));
  CHECK(next->parser.frames.back().obj().at("assistant_data").at("status") == "error");
  CHECK(*next->parser.frames.front().id == p.last_id() + 1);

  // With the tool gone the session answers normally.
  auto patched = http_call(gw.port(), "PATCH", "/sessions/" + sid, R"({"config":{}})");
  REQUIRE(patched.status == 200);
  auto fine = run_message(gw.port(), sid, "all good");
  check_run_stream(*fine, fine->head.header("X-Run-Id"));
  CHECK(fine->parser.frames.back().obj().at("assistant_data").at("status") == "complete");
  CHECK(fine->parser.tokens() == "all good");
}

TEST_CASE("runs: an unknown tool is an error run") {
  gateway_process gw;
  const std::string sid = create_mock_session(gw.port(), R"({"tool_calls":[{"name":"no_such_tool","args":{}}]})");
  auto r = run_message(gw.port(), sid, "use it");
  check_run_stream(*r, r->head.header("X-Run-Id"));
  const auto& p = r->parser;
  INFO("body: " << p.body);
  REQUIRE(p.count("tool_call") == 1);
  CHECK(p.first("tool_call")->obj().at("name") == "no_such_tool");
  REQUIRE(p.count("tool_result") == 1);
  CHECK(p.first("tool_result")->obj().at("exit_code") != 0);
  REQUIRE(p.count("error") == 1);
  CHECK(p.frames.back().obj().at("assistant_data").at("status") == "error");
  CHECK(p.count("token") == 0);

  auto next = run_message(gw.port(), sid, "still here");
  CHECK(next->head.status == 200);
  CHECK(next->parser.has_done());
}

TEST_CASE("runs: fail_after streams that many tokens, then error, then done") {
  gateway_process gw;
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":10,"fail_after":5})");
  auto r = run_message(gw.port(), sid, "fail please");
  const std::string run_id = r->head.header("X-Run-Id");
  check_run_stream(*r, run_id);
  const auto& p = r->parser;
  INFO("body: " << p.body);
  CHECK(p.count("token") == 5);
  CHECK(p.tokens() == "tok0 tok1 tok2 tok3 tok4");
  REQUIRE(p.count("error") == 1);
  auto index_of = [&](const sse_frame* f) { return f - p.frames.data(); };
  CHECK(index_of(p.last("token")) < index_of(p.first("error")));
  CHECK(index_of(p.first("error")) < index_of(p.first("done")));
  CHECK(p.first("error")->obj().at("code").is_string());
  CHECK(p.first("error")->obj().at("message").is_string());
  const auto& answer = p.frames.back().obj().at("assistant_data").as_object();
  CHECK(answer.at("status") == "error");
  CHECK(answer.at("content") == "tok0 tok1 tok2 tok3 tok4");
  CHECK(answer.at("token_count") == 5);
  auto messages = get_messages(gw.port(), sid);
  REQUIRE(messages.size() == 2);
  CHECK(messages[0] == boost::json::value(answer));
  CHECK(messages[0].at("content") == "tok0 tok1 tok2 tok3 tok4");
  CHECK(messages[0].at("status") == "error");
}

TEST_CASE("runs: planning and step_complete come in order around the tokens") {
  gateway_process gw;
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":2,"plan":["look","answer"]})");
  auto r = run_message(gw.port(), sid, "plan it");
  check_run_stream(*r, r->head.header("X-Run-Id"));
  const auto& p = r->parser;
  INFO("body: " << p.body);
  REQUIRE(p.count("planning") == 1);
  CHECK(p.first("planning")->obj().at("todos") == boost::json::parse(R"(["look","answer"])"));
  auto steps = p.of_type("step_complete");
  REQUIRE(steps.size() == 2);
  CHECK(steps[0]->obj().at("step_number") == 1);
  CHECK(steps[0]->obj().at("total_steps") == 2);
  CHECK(steps[0]->obj().at("description") == "look");
  CHECK(steps[1]->obj().at("step_number") == 2);
  CHECK(steps[1]->obj().at("description") == "answer");
  auto index_of = [&](const sse_frame* f) { return f - p.frames.data(); };
  CHECK(index_of(p.first("planning")) < index_of(p.first("token")));
  CHECK(index_of(p.last("token")) < index_of(steps[0]));
  CHECK(index_of(steps[1]) < index_of(p.first("usage")));
}

TEST_CASE("runs: a full-speed run of 5000 tokens reaches a reading client whole") {
  // The client reads as fast as loopback allows: it is not a slow subscriber,
  // so its stream must carry every token and end with done and the last chunk.
  gateway_process gw;
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":5000})");
  auto r = start_message(gw.port(), sid, "fast");
  REQUIRE(r->head.status == 200);
  const std::string run_id = r->head.header("X-Run-Id");
  const bool ended = r->read_to_end(20s);
  INFO("tokens received: " << r->parser.count("token") << ", last id " << r->parser.last_id() << ", server closed: " << r->eof);
  CHECK(ended);
  CHECK(r->parser.count("token") == 5000);
  REQUIRE(r->parser.has_done());
  check_run_stream(*r, run_id);
  CHECK(r->parser.frames.back().obj().at("assistant_data").at("content") == jstr(r->parser.tokens()));
  // The run itself is persisted whole in any case.
  CHECK(eventually([&] { return get_session(gw.port(), sid).at("message_count") == 2; }, 10s));
  auto messages = get_messages(gw.port(), sid);
  REQUIRE(messages.size() == 2);
  CHECK(messages[0].at("token_count") == 5000);
}

TEST_CASE("runs: an HTTP/1.0 client gets the stream without chunked coding") {
  // RFC 9112 section 6.1: no Transfer-Encoding in answer to an HTTP/1.0 request; the body
  // is delimited by closing the connection (nginx talks HTTP/1.0 to upstreams by default).
  gateway_process gw;
  const std::string sid = create_session(gw.port());
  http_client c(gw.port());
  const std::string body = message_body("hello there");
  c.send_raw("POST " + messages_path(sid) + " HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body);
  std::string all;
  const auto deadline = clock_type::now() + 10s;
  while (clock_type::now() < deadline) {
    auto bytes = c.read_some(200ms);
    if (bytes.empty() && c.closed_by_peer(0ms)) break;
    all += bytes;
  }
  CHECK(c.closed_by_peer(0ms));
  auto end = all.find("\r\n\r\n");
  REQUIRE(end != std::string::npos);
  const std::string head = all.substr(0, end + 2);
  const std::string payload = all.substr(end + 4);
  INFO("head: " << head);
  CHECK(head.starts_with("HTTP/1.0 200 OK\r\n"));
  CHECK(head.find("Content-Type: text/event-stream\r\n") != std::string::npos);
  if (head.find("Transfer-Encoding") != std::string::npos) {
    FAIL_CHECK("chunked coding sent to an HTTP/1.0 client; body starts: " << payload.substr(0, 40));
    return;
  }
  INFO("payload: " << payload);
  sse_parser p;
  p.feed(payload);
  for (const auto& problem : p.problems) FAIL_CHECK("SSE format: " << problem);
  CHECK(payload.starts_with("retry: 3000\nid: 1\nevent: status\n"));
  CHECK(p.tokens() == "hello there");
  CHECK(p.has_done());
}

TEST_CASE("runs: the test's own SSE parser and chunk decoder catch malformed streams") {
  // No server: makes sure the checks above would see a broken stream.
  {
    sse_parser p;
    p.feed("retry: 3000\nid: 1\nevent: token\ndata: {\"run_id\":\"r\",\"content\":\"a\"}\n\n: heartbeat\nid: 2\nev");
    p.feed("ent: done\ndata: {\"run_id\":\"r\"}\n\n");
    CHECK(p.problems.empty());
    CHECK(p.retry_first);
    CHECK(p.frames.size() == 2);
    CHECK(p.heartbeat_at == std::vector<std::size_t>{1});
    CHECK(p.tokens() == "a");
    CHECK(!p.partial());
  }
  auto problems_of = [](std::string_view text) {
    sse_parser p;
    p.feed(text);
    return p.problems.size();
  };
  CHECK(problems_of("retry: 3000\n\nid: 1\nevent: x\ndata: {}\n\n") > 0);    // a lone blank line
  CHECK(problems_of(": heartbeat\n\n") > 0);                                 // heartbeat with its own blank line
  CHECK(problems_of("data: {}\nid: 1\nevent: x\n\n") > 0);                   // fields out of order
  CHECK(problems_of("id: 1\nevent: x\ndata: {}\ndata: {}\n\n") > 0);         // two data lines
  CHECK(problems_of("id: 1\nevent: x\ndata: not json\n\n") > 0);             // data not JSON
  CHECK(problems_of("id: x\nevent: x\ndata: {}\n\n") > 0);                   // id not a number
  CHECK(problems_of("id:1\nevent: x\ndata: {}\n\n") > 0);                    // no space after the colon
  CHECK(problems_of("id: 1\r\nevent: x\r\ndata: {}\r\n\r\n") > 0);           // CRLF lines
  CHECK(problems_of(": ping\n") > 0);                                        // another comment
  CHECK(problems_of("event: reconnected\ndata: {\"gap\":false}\n\n") == 0);  // unnumbered reconnected

  chunk_decoder ok;
  CHECK(ok.feed("5\r\nhello\r\n0\r\n\r\n") == "hello");
  CHECK(ok.finished());
  CHECK(ok.problems.empty());
  chunk_decoder bad_size;
  bad_size.feed("zz\r\nhello\r\n");
  CHECK(bad_size.broken());
  chunk_decoder bad_end;
  bad_end.feed("5\r\nhelloXX");
  CHECK(bad_end.broken());
}
