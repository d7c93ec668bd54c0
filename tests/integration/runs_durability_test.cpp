// Runs across restarts: SIGKILL and SIGTERM. Event ids are never reused, every
// announced done is in the messages, and a cut-short run is closed at start-up.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <thread>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::runs;

namespace {

// Every done seen by a client is a message with exactly that content.
void check_dones_persisted(std::uint16_t port, const std::string& sid, const std::vector<boost::json::object>& dones) {
  auto messages = get_messages(port, sid);
  INFO("messages: " << boost::json::serialize(messages));
  for (const auto& answer : dones) {
    bool found = false;
    for (const auto& m : messages)
      if (m.at("id") == answer.at("id")) {
        found = true;
        CHECK(m == boost::json::value(answer));
      }
    INFO("answer: " << boost::json::serialize(answer));
    CHECK(found);
  }
}

boost::json::object done_of(const sse_reader& r) { return r.parser.frames.back().obj().at("assistant_data").as_object(); }

}  // namespace

TEST_CASE("runs: after kill -9 the ids go on and every done message is kept") {
  gateway_process gw;
  const std::string sid = create_session(gw.port());
  std::vector<boost::json::object> dones;
  auto first = run_message(gw.port(), sid, "before the crash");
  dones.push_back(done_of(*first));
  const std::int64_t last1 = first->parser.last_id();

  gw.kill9();
  gw.start();
  check_dones_persisted(gw.port(), sid, dones);
  auto s = get_session(gw.port(), sid);
  CHECK(s.at("last_event_id") == last1);
  CHECK(s.at("message_count") == 2);
  CHECK(s.at("run").is_null());

  auto second = run_message(gw.port(), sid, "after the crash");
  check_run_stream(*second, second->head.header("X-Run-Id"));
  CHECK(*second->parser.frames.front().id == last1 + 1);
  dones.push_back(done_of(*second));
  check_dones_persisted(gw.port(), sid, dones);
  CHECK(get_session(gw.port(), sid).at("message_count") == 4);
  CHECK(get_session(gw.port(), sid).at("last_event_id") == second->parser.last_id());

  // And once more, killed right after a done was received.
  const std::int64_t last2 = second->parser.last_id();
  gw.kill9();
  gw.start();
  check_dones_persisted(gw.port(), sid, dones);
  auto third = run_message(gw.port(), sid, "third");
  CHECK(*third->parser.frames.front().id == last2 + 1);
}

TEST_CASE("runs: kill -9 in the middle of a run: it is closed at start-up, no id is reused") {
  gateway_process gw;
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":200,"tokens_per_second":50})");
  auto live = start_message(gw.port(), sid, "interrupted soon");
  REQUIRE(live->head.status == 200);
  const std::string run_id = live->head.header("X-Run-Id");
  REQUIRE(live->read_until([](const sse_parser& p) { return p.count("token") >= 5; }, 5s));
  gw.kill9();
  // Whatever the client got before the crash.
  live->pump(200ms);
  const std::int64_t seen = live->parser.last_id();
  const std::string seen_tokens = live->parser.tokens();
  CHECK(!live->parser.has_done());

  gw.start();
  auto s = get_session(gw.port(), sid);
  INFO("session: " << boost::json::serialize(s));
  CHECK(s.at("run").is_null());
  CHECK(s.at("last_event_id").as_int64() >= seen);
  auto messages = get_messages(gw.port(), sid);
  INFO("messages: " << boost::json::serialize(messages));
  REQUIRE(messages.size() == 2);
  CHECK(messages[0].at("role") == "assistant");
  CHECK(messages[0].at("status") == "interrupted");
  // What it holds is what was streamed (the client may have missed the very last committed tokens).
  const std::string kept(messages[0].at("content").as_string());
  CHECK(kept.starts_with(seen_tokens));
  CHECK(messages[1].at("content") == "interrupted soon");

  // The interrupted run ends like any run for a follower: error, then done (resumed after what was seen).
  sse_reader follower(gw.port());
  follower.send("GET", "/sessions/" + sid + "/events", "", {{"Last-Event-ID", std::to_string(seen)}});
  REQUIRE(follower.head.status == 200);
  REQUIRE(follower.read_until([](const sse_parser& p) { return p.has_done(); }, 5s));
  const auto& replay = follower.parser;
  INFO("replay: " << replay.body.substr(0, 3000));
  REQUIRE(replay.frames.size() >= 3);
  CHECK(replay.frames.front().event == "reconnected");
  const auto& done = replay.frames.back();
  CHECK(done.event == "done");
  CHECK(done.field("run_id") == run_id);
  CHECK(done.obj().at("assistant_data").at("status") == "interrupted");
  CHECK(done.obj().at("assistant_data") == messages[0]);
  CHECK(replay.frames[replay.frames.size() - 2].event == "error");
  std::string replayed_tokens = seen_tokens;
  for (const auto& f : replay.frames)
    if (f.event == "token") replayed_tokens += f.field("content");
  CHECK(replayed_tokens == kept);
  follower.disconnect();

  // The next run's ids start above every id the crashed process handed out.
  const std::int64_t last_id = get_session(gw.port(), sid).at("last_event_id").as_int64();
  CHECK(last_id == *done.id);
  auto patched = http_call(gw.port(), "PATCH", "/sessions/" + sid, R"({"config":{}})");
  REQUIRE(patched.status == 200);
  auto next = run_message(gw.port(), sid, "fresh start");
  check_run_stream(*next, next->head.header("X-Run-Id"));
  CHECK(*next->parser.frames.front().id == last_id + 1);
  CHECK(get_session(gw.port(), sid).at("message_count") == 4);
}

TEST_CASE("runs: a clean SIGTERM restart keeps every message and the id sequence") {
  gateway_process gw;
  const std::string sid = create_mock_session(gw.port(), R"({"tool_calls":[{"name":"calculator","args":{"expression":"6*7"}}]})");
  std::vector<boost::json::object> dones;
  auto first = run_message(gw.port(), sid, "with a tool");
  dones.push_back(done_of(*first));
  const auto messages_before = get_messages(gw.port(), sid);
  const std::int64_t last1 = first->parser.last_id();

  CHECK(gw.terminate() == 0);
  gw.start();
  CHECK(get_messages(gw.port(), sid) == messages_before);
  check_dones_persisted(gw.port(), sid, dones);
  CHECK(get_session(gw.port(), sid).at("last_event_id") == last1);
  auto second = run_message(gw.port(), sid, "after a clean stop");
  CHECK(*second->parser.frames.front().id == last1 + 1);
  dones.push_back(done_of(*second));
  CHECK(get_session(gw.port(), sid).at("message_count") == 8);
  CHECK(gw.terminate() == 0);
  gw.start();
  check_dones_persisted(gw.port(), sid, dones);
  CHECK(get_session(gw.port(), sid).at("last_event_id") == second->parser.last_id());
}

TEST_CASE("runs: SIGTERM lets a live run finish its stream, then exits 0 with it persisted") {
  gateway_process gw;
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":20,"tokens_per_second":40})");
  auto live = start_message(gw.port(), sid, "drain me");
  REQUIRE(live->head.status == 200);
  REQUIRE(live->read_until([](const sse_parser& p) { return p.count("token") >= 2; }, 5s));
  int exit_status = -100;
  std::thread stopper([&] { exit_status = gw.terminate(); });
  const bool ended = live->read_to_end(15s);
  stopper.join();
  CHECK(exit_status == 0);
  REQUIRE(ended);
  check_run_stream(*live, live->head.header("X-Run-Id"));
  CHECK(live->parser.count("token") == 20);
  const auto answer = done_of(*live);
  CHECK(answer.at("status") == "complete");
  gw.start();
  check_dones_persisted(gw.port(), sid, {answer});
  CHECK(get_session(gw.port(), sid).at("last_event_id") == live->parser.last_id());
}

TEST_CASE("runs: kill -9 while paced runs' events are in the journal only: every event a client saw is replayed, byte for byte") {
  // Paced tokens are made durable by the event journal's files (docs/streaming.md, "The
  // event log"); none of these runs lives long enough for a segment of its own.
  gateway_process gw;
  std::vector<std::string> sids;
  std::vector<std::unique_ptr<sse_reader>> live;
  for (int i = 0; i < 4; ++i) {
    sids.push_back(create_mock_session(gw.port(), R"({"tokens":500,"tokens_per_second":100})"));
    live.push_back(start_message(gw.port(), sids.back(), "journal me"));
    REQUIRE(live.back()->head.status == 200);
  }
  for (auto& l : live) REQUIRE(l->read_until([](const sse_parser& p) { return p.count("token") >= 30; }, 10s));
  gw.kill9();
  // (On PostgreSQL, integration_pg, every batch is a row: no journal files.)
  const auto journal_dir = gw.db_path() + "-events";
  CHECK(std::filesystem::exists(journal_dir) == !on_postgres());

  gw.start();
  if (!on_postgres()) {
    // Folded into the log at start-up: the journal's files are gone (the new process's own
    // file holds nothing yet).
    std::uintmax_t journal_bytes = 0;
    for (const auto& f : std::filesystem::directory_iterator(journal_dir)) journal_bytes += f.file_size();
    CHECK(journal_bytes == 0);
  }
  for (std::size_t i = 0; i < sids.size(); ++i) {
    live[i]->pump(100ms);  // whatever reached the client before the crash
    const auto& seen = live[i]->parser;
    INFO("session " << sids[i]);
    sse_reader replay(gw.port());
    replay.send("GET", "/sessions/" + sids[i] + "/events", "", {{"Last-Event-ID", "0"}});
    REQUIRE(replay.head.status == 200);
    REQUIRE(replay.read_until([](const sse_parser& p) { return p.has_done(); }, 10s));
    std::map<std::int64_t, std::string> replayed;
    for (const auto& f : replay.parser.frames)
      if (f.id) replayed[*f.id] = f.raw;
    // Every frame the client had, under the same id, with the same bytes; no id twice.
    std::size_t numbered = 0;
    for (const auto& f : seen.frames) {
      if (!f.id) continue;
      ++numbered;
      REQUIRE(replayed.count(*f.id) == 1);
      CHECK(replayed[*f.id] == f.raw);
    }
    CHECK(numbered >= 31);
    // The run was closed at start-up after what the crashed process committed, and the
    // ids are consecutive from 1.
    CHECK(replayed.begin()->first == 1);
    CHECK(replayed.rbegin()->first == static_cast<std::int64_t>(replayed.size()));
    CHECK(get_session(gw.port(), sids[i]).at("last_event_id").as_int64() == replayed.rbegin()->first);
  }
}
