// Double texting on the real binary (docs/timeline.md): messages posted while a run
// is live are queued (multitask enqueue) and answered together by the next run, or
// interrupt the live run (persisted as aborted) for a new one that sees its partial
// answer. Queued messages survive kill -9.
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

http_reply post_with(std::uint16_t port, const std::string& sid, std::string_view content, std::string_view multitask) {
  boost::json::object body{{"content", content}, {"multitask", multitask}};
  return http_call(port, "POST", runs::messages_path(sid), boost::json::serialize(body));
}

std::vector<const sse_frame*> statuses(const sse_parser& p, std::string_view status) {
  std::vector<const sse_frame*> out;
  for (const auto* f : p.of_type("status"))
    if (f->field("status") == status) out.push_back(f);
  return out;
}

}  // namespace

TEST_CASE("timeline: three messages queued during a run are answered by one next run") {
  gateway_process gw;
  // The mock thinks for a while before it answers: the first run stays live.
  const std::string sid = runs::create_mock_session(gw.port(), R"({"think_ms":1500})");
  auto follower = open_events(gw.port(), sid, 0);
  auto first = runs::start_message(gw.port(), sid, "first question");
  REQUIRE(first->head.status == 200);
  const std::string first_run = first->head.header("X-Run-Id");

  std::vector<std::string> queued_ids;
  for (const char* text : {"alpha apples", "beta bananas", "gamma grapes"}) {
    auto r = post_with(gw.port(), sid, text, "enqueue");
    INFO(r.body);
    REQUIRE(r.status == 202);
    CHECK(r.json().at("status") == "queued");
    CHECK(r.json().at("run_id") == jstr(first_run));
    CHECK(r.json().at("stream_url") == jstr("/sessions/" + sid + "/events"));
    queued_ids.push_back(str(r.json().at("message_id")));
  }
  REQUIRE(first->read_to_end(20s));
  CHECK(first->parser.frames.back().event == "done");

  // The next run starts by itself, takes the three as one turn, and answers all of them.
  INFO("follower: " << follower->parser.body);
  INFO("gateway log: " << gw.stderr_text());
  REQUIRE(follower->read_until([](const sse_parser& p) { return p.count("done") >= 2; }, 20s));
  const auto queued_statuses = statuses(follower->parser, "queued");
  REQUIRE(queued_statuses.size() == 3);
  CHECK(queued_statuses[0]->field("source") == "system");
  CHECK(queued_statuses[2]->obj().at("queued") == 3);
  const auto dequeued = statuses(follower->parser, "dequeued");
  REQUIRE(dequeued.size() == 1);
  const auto& ids = dequeued[0]->obj().at("message_ids").as_array();
  REQUIRE(ids.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(ids[i] == jstr(queued_ids[i]));
  const auto second_done = follower->parser.of_type("done")[1];
  CHECK(second_done->field("run_id") != first_run);
  const std::string answer = str(second_done->obj().at("assistant_data").at("content"));
  for (const char* word : {"alpha", "beta", "gamma", "grapes"}) CHECK(answer.find(word) != std::string::npos);

  auto messages = runs::get_messages(gw.port(), sid);  // newest first
  REQUIRE(messages.size() == 6);
  CHECK(messages[5].at("content") == "first question");
  CHECK(messages[4].at("role") == "assistant");
  CHECK(messages[3].at("id") == jstr(queued_ids[0]));
  CHECK(messages[2].at("id") == jstr(queued_ids[1]));
  CHECK(messages[1].at("id") == jstr(queued_ids[2]));
  CHECK(messages[1].at("source") == "customer");
  CHECK(messages[0].at("role") == "assistant");
  CHECK(metric(gw.port(), "gateway_runs_started_total") == 2);
}

TEST_CASE("timeline: a second round of queued messages in one session is answered too (queue seqs are never reused)") {
  gateway_process gw;
  const std::string sid = runs::create_mock_session(gw.port(), R"({"think_ms":800})");
  auto follower = open_events(gw.port(), sid, 0);
  for (int round = 1; round <= 2; ++round) {
    INFO("round " << round);
    auto live = runs::start_message(gw.port(), sid, "question " + std::to_string(round));
    REQUIRE(live->head.status == 200);
    auto q = post_with(gw.port(), sid, round == 1 ? "first queued kiwi" : "second queued mango", "enqueue");
    INFO(q.body);
    REQUIRE(q.status == 202);
    REQUIRE(live->read_to_end(20s));
    // The queue's run answers it: two runs per round.
    INFO("follower: " << follower->parser.body);
    REQUIRE(follower->read_until([round](const sse_parser& p) { return p.count("done") >= static_cast<std::size_t>(2 * round); },
                                 20s));
    const auto answer = str(follower->parser.of_type("done")[2 * round - 1]->obj().at("assistant_data").at("content"));
    CHECK(answer.find(round == 1 ? "kiwi" : "mango") != std::string::npos);
  }
  CHECK(metric(gw.port(), "gateway_runs_started_total") == 4);
}

TEST_CASE("timeline: interrupt aborts the live run, keeps its partial answer, and the new run sees it") {
  gateway_process gw;
  const std::string sid = runs::create_mock_session(gw.port(), R"({"tokens_per_second":10})");
  auto first = runs::start_message(gw.port(), sid, "one two three four five six seven eight nine ten eleven twelve");
  REQUIRE(first->head.status == 200);
  const std::string first_run = first->head.header("X-Run-Id");
  REQUIRE(first->read_until([](const sse_parser& p) { return p.count("token") >= 3; }, 10s));

  // Without multitask (nor config.multitask) it is today's 409.
  CHECK(http_call(gw.port(), "POST", runs::messages_path(sid), runs::message_body("stop and answer this")).status == 409);
  auto interrupting = std::make_unique<sse_reader>(gw.port());
  interrupting->send("POST", runs::messages_path(sid), R"({"content":"stop and answer this","multitask":"interrupt"})",
                     runs::json_headers);
  INFO("gateway log: " << gw.stderr_text());
  REQUIRE(interrupting->head.status == 200);
  const std::string second_run = interrupting->head.header("X-Run-Id");
  CHECK(second_run != first_run);
  REQUIRE(interrupting->read_to_end(20s));
  REQUIRE(first->read_to_end(10s));
  CHECK(!statuses(first->parser, "interrupted").empty());
  CHECK(!statuses(first->parser, "aborted").empty());
  CHECK(first->parser.frames.back().event == "done");

  auto messages = runs::get_messages(gw.port(), sid);  // newest first
  REQUIRE(messages.size() == 4);
  const auto& partial = messages[2];
  CHECK(partial.at("role") == "assistant");
  CHECK(partial.at("status") == "aborted");
  const std::string partial_text = str(partial.at("content"));
  CHECK(!partial_text.empty());
  CHECK(messages[1].at("content") == "stop and answer this");
  CHECK(messages[0].at("status") == "complete");

  // The mock counts the conversation it was given: the first question, the partial
  // answer and the new message. Without the partial answer the count would be lower.
  auto words = [](const std::string& s) {
    std::int64_t n = 0;
    bool in = false;
    for (char c : s) {
      const bool w = !std::isspace(static_cast<unsigned char>(c));
      n += w && !in;
      in = w;
    }
    return n;
  };
  const auto usage = interrupting->parser.of_type("usage").back();
  CHECK(usage->obj().at("input_tokens").to_number<std::int64_t>() == 12 + words(partial_text) + 4);
}

TEST_CASE("timeline: queued messages survive kill -9 and the session's next run answers them first") {
  gateway_process gw;
  const std::string sid = runs::create_mock_session(gw.port(), R"({"think_ms":60000})");
  auto first = runs::start_message(gw.port(), sid, "a long one");
  REQUIRE(first->head.status == 200);
  REQUIRE(post_with(gw.port(), sid, "queued one", "enqueue").status == 202);
  REQUIRE(post_with(gw.port(), sid, "queued two", "enqueue").status == 202);
  gw.kill9();
  gw.start();
  // Recovery closes the interrupted run; the queue waits for the session's next message.
  CHECK(runs::get_session(gw.port(), sid).at("run").is_null());
  REQUIRE(http_call(gw.port(), "PATCH", "/sessions/" + sid, R"({"config":{"mock":{"tokens_per_second":1000}}})").status == 200);
  auto next = runs::run_message(gw.port(), sid, "and now");
  const std::string answer = str(next->parser.of_type("done").back()->obj().at("assistant_data").at("content"));
  CHECK(answer == "queued one queued two and now");
  CHECK(!statuses(next->parser, "dequeued").empty());
  auto messages = runs::get_messages(gw.port(), sid);  // newest first
  REQUIRE(messages.size() == 6);
  CHECK(messages[4].at("status") == "interrupted");
  CHECK(messages[3].at("content") == "queued one");
  CHECK(messages[2].at("content") == "queued two");
  CHECK(messages[1].at("content") == "and now");
}

TEST_CASE("timeline: the queue is bounded: the 33rd queued message is 429 and stores nothing; operators wait for the run") {
  gateway_process gw;
  const std::string sid = runs::create_mock_session(gw.port(), R"({"think_ms":60000})");
  auto first = runs::start_message(gw.port(), sid, "a long one");
  REQUIRE(first->head.status == 200);
  for (int i = 1; i <= 32; ++i) {
    auto r = post_with(gw.port(), sid, "queued " + std::to_string(i), "enqueue");
    REQUIRE(r.status == 202);
    CHECK(r.json().at("queued") == i);
  }
  // status thinking, then one `queued` status each (published with the 202, committed just after).
  REQUIRE(runs::eventually([&] { return runs::get_session(gw.port(), sid).at("last_event_id") == 33; }));
  const auto before = runs::get_session(gw.port(), sid).at("last_event_id");
  runs::check_error(post_with(gw.port(), sid, "one too many", "enqueue"), 429, "too_many_requests");
  CHECK(runs::get_session(gw.port(), sid).at("last_event_id") == before);
  // An operator cannot answer over a live run either: 409, nothing stored.
  runs::check_error(http_call(gw.port(), "POST", "/sessions/" + sid + "/operator-messages", R"({"content":"hi"})"), 409,
                    "run_in_progress");
  CHECK(runs::get_session(gw.port(), sid).at("message_count") == 1);
  // Ending the live run starts the queue's: all 32, in order, as one turn.
  REQUIRE(http_call(gw.port(), "POST", "/sessions/" + sid + "/abort").status == 200);
  REQUIRE(first->read_to_end(10s));
  REQUIRE(runs::eventually([&] { return runs::get_session(gw.port(), sid).at("message_count") == 34; }, 20s));
  auto messages = runs::get_messages(gw.port(), sid);  // newest first: the queue's run is live (think_ms)
  CHECK(messages[0].at("content") == "queued 32");
  CHECK(messages[31].at("content") == "queued 1");
  CHECK(messages[32].at("status") == "aborted");
}
