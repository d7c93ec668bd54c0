// The session timeline on the real binary (docs/timeline.md): every event and
// message names its source; custom events join the session's sequence, numbered,
// delivered to every follower, resumable, never renumbered after a crash; bad input
// is refused with the contract's error body and changes nothing.
#include <doctest/doctest.h>

#include <string>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/resume_support.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::resume;
using agw::test::runs::jstr;
using agw::test::runs::str;
using namespace std::chrono_literals;

namespace {

std::string custom_path(const std::string& sid) { return "/sessions/" + sid + "/events"; }

http_reply post_custom(std::uint16_t port, const std::string& sid, std::string_view body) {
  return http_call(port, "POST", custom_path(sid), body, {{"Content-Type", "application/json"}});
}

std::int64_t last_event_id(std::uint16_t port, const std::string& sid) {
  return runs::get_session(port, sid).at("last_event_id").to_number<std::int64_t>();
}

}  // namespace

TEST_CASE("timeline: a run's events and messages name their sources") {
  gateway_process gw;
  const std::string sid = runs::create_mock_session(gw.port(), R"({"tokens":3})");
  auto run = runs::run_message(gw.port(), sid, "hello there");
  for (const auto& f : run->parser.frames) {
    INFO("frame: " << f.raw);
    CHECK(f.field("source") == "ai_agent");
  }
  auto messages = runs::get_messages(gw.port(), sid);  // newest first
  REQUIRE(messages.size() == 2);
  CHECK(messages[0].at("role") == "assistant");
  CHECK(messages[0].at("source") == "ai_agent");
  CHECK(messages[1].at("role") == "user");
  CHECK(messages[1].at("source") == "customer");
  // The done's message says it too.
  CHECK(run->parser.of_type("done").back()->obj().at("assistant_data").at("source") == "ai_agent");
}

TEST_CASE("timeline: custom events are numbered in the session's sequence, delivered, resumable and durable") {
  gateway_process gw;
  const std::string sid = runs::create_mock_session(gw.port(), R"({"tokens":2})");
  runs::run_message(gw.port(), sid, "first run");
  const auto before = last_event_id(gw.port(), sid);
  REQUIRE(before > 0);

  auto follower = open_events(gw.port(), sid, before);
  REQUIRE(follower->head.status == 200);
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 3; ++i) {
    auto r = post_custom(gw.port(), sid, R"({"type":"custom","data":{"n":)" + std::to_string(i) + "}}");
    INFO(r.body);
    REQUIRE(r.status == 201);
    ids.push_back(r.json().at("id").to_number<std::int64_t>());
    CHECK(r.json().at("source") == "customer_ui");  // the default
  }
  CHECK(ids == std::vector<std::int64_t>{before + 1, before + 2, before + 3});
  REQUIRE(follower->read_until([](const sse_parser& p) { return p.count("custom") >= 3; }, 10s));
  const auto customs = follower->parser.of_type("custom");
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(*customs[i]->id == ids[i]);
    CHECK(customs[i]->obj().at("run_id").is_null());
    CHECK(customs[i]->field("source") == "customer_ui");
    CHECK(customs[i]->obj().at("data").at("n") == static_cast<std::int64_t>(i));
  }

  // Resumed with Last-Event-ID: only the ones after it, in order.
  auto resumed = open_events(gw.port(), sid, ids[0]);
  REQUIRE(resumed->read_until([](const sse_parser& p) { return p.count("custom") >= 2; }, 10s));
  CHECK(*resumed->parser.of_type("custom")[0]->id == ids[1]);
  CHECK(*resumed->parser.of_type("custom")[1]->id == ids[2]);

  // During a run: the run's events and the custom one share one sequence, and the
  // run is not disturbed (one done, ids without gaps).
  const std::string slow = runs::create_mock_session(gw.port(), R"({"tokens":40,"tokens_per_second":40})");
  auto live = runs::start_message(gw.port(), slow, "go");
  REQUIRE(live->head.status == 200);
  REQUIRE(live->read_until([](const sse_parser& p) { return p.count("token") >= 2; }, 10s));
  auto during = post_custom(gw.port(), slow, R"({"type":"custom","data":{"clicked":"like"},"source":"customer"})");
  REQUIRE(during.status == 201);
  const auto during_id = during.json().at("id").to_number<std::int64_t>();
  REQUIRE(live->read_to_end(20s));
  auto all = open_events(gw.port(), slow, 0);
  REQUIRE(all->read_until([](const sse_parser& p) { return p.count("done") >= 1; }, 10s));
  std::int64_t previous = 0;
  for (const auto& f : all->parser.frames) {
    if (!f.id) continue;
    CHECK(*f.id == previous + 1);
    previous = *f.id;
  }
  REQUIRE(all->parser.count("custom") == 1);
  CHECK(*all->parser.of_type("custom")[0]->id == during_id);
  CHECK(all->parser.of_type("custom")[0]->field("source") == "customer");

  // kill -9: the ids handed out stay taken; the next one follows them.
  gw.kill9();
  gw.start();
  auto after_crash = post_custom(gw.port(), sid, R"({"type":"custom","data":{}})");
  REQUIRE(after_crash.status == 201);
  INFO("gateway log: " << gw.stderr_text());
  CHECK(after_crash.json().at("id").to_number<std::int64_t>() == ids[2] + 1);
  auto replay = open_events(gw.port(), sid, before);
  INFO("replay: " << replay->parser.body);
  REQUIRE(replay->read_until([](const sse_parser& p) { return p.count("custom") >= 4; }, 10s));
  CHECK(*replay->parser.of_type("custom")[3]->id == ids[2] + 1);
}

TEST_CASE("timeline: bad custom events, modes, sources and multitask values are 4xx and change nothing") {
  gateway_process gw;
  const std::string sid = runs::create_mock_session(gw.port(), R"({"tokens":2})");
  runs::run_message(gw.port(), sid, "one");
  const auto before = last_event_id(gw.port(), sid);
  const std::string big(20 * 1024, 'x');
  struct bad_case {
    std::string body;
    int status;
    const char* code;
  };
  const bad_case cases[] = {
      {R"({"type":"token","data":{}})", 400, "bad_request"},
      {R"({"data":{}})", 400, "bad_request"},
      {R"({"type":"custom","data":[1]})", 400, "bad_request"},
      {R"({"type":"custom"})", 400, "bad_request"},
      {R"({"type":"custom","data":{},"source":"robot"})", 400, "bad_request"},
      {R"({"type":"custom","data":{},"source":7})", 400, "bad_request"},
      {R"({"type":"custom","data":{"big":")" + big + R"("}})", 413, "payload_too_large"},
      {R"([1,2])", 400, "bad_request"},
  };
  for (const auto& c : cases) {
    INFO("body: " << c.body.substr(0, 80));
    auto r = post_custom(gw.port(), sid, c.body);
    runs::check_error(r, c.status, c.code);
  }
  CHECK(post_custom(gw.port(), "00000000-0000-4000-8000-000000000000", R"({"type":"custom","data":{}})").status == 404);
  CHECK(last_event_id(gw.port(), sid) == before);

  for (const char* body : {R"({"mode":"robot"})", R"({"mode":1})", R"({"mode":null})"}) {
    INFO(body);
    runs::check_error(http_call(gw.port(), "PATCH", "/sessions/" + sid, body), 400, "bad_request");
  }
  CHECK(runs::get_session(gw.port(), sid).at("mode") == "auto");
  runs::check_error(http_call(gw.port(), "PATCH", "/sessions/" + sid, R"({"config":{"multitask":"later"}})"), 400, "bad_request");

  const auto count = runs::get_session(gw.port(), sid).at("message_count");
  for (const char* body : {R"({"content":"x","multitask":"later"})", R"({"content":"x","multitask":3})"}) {
    INFO(body);
    runs::check_error(http_call(gw.port(), "POST", runs::messages_path(sid), body), 400, "bad_request");
  }
  const std::string op = "/sessions/" + sid + "/operator-messages";
  for (const char* body : {R"({"content":"hi","source":"customer"})", R"({"content":"  "})", R"({"content":"hi","stream":"yes"})",
                           R"({"source":"human_agent"})"}) {
    INFO(body);
    runs::check_error(http_call(gw.port(), "POST", op, body), 400, "bad_request");
  }
  CHECK(runs::get_session(gw.port(), sid).at("message_count") == count);
  CHECK(last_event_id(gw.port(), sid) == before);
}
