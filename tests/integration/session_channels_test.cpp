// An idle session's channel (its live state in memory) is dropped after
// GATEWAY_CHANNEL_IDLE: memory follows the sessions in use. Nothing a client sees
// changes: ids go on from where they were, a resume from the log after the drop
// replays every event once, byte for byte, and a follower that comes back follows the
// next run whole.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/resume_support.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::resume;
using namespace std::chrono_literals;

namespace {

bool evicted(std::uint16_t port, double times) {
  return runs::eventually(
      [&] {
        return metric(port, "gateway_session_channels") == 0 && metric(port, "gateway_session_channels_evicted_total") >= times;
      },
      10s);
}

std::vector<std::int64_t> json_ids(std::uint16_t port, const std::string& sid) {
  std::vector<std::int64_t> out;
  for (;;) {  // page by page (at most 1,000 events each)
    const std::int64_t after = out.empty() ? 0 : out.back();
    auto r = http_call(port, "GET", events_path(sid) + "?after=" + std::to_string(after) + "&limit=1000", {},
                       {{"Accept", "application/json"}});
    REQUIRE(r.status == 200);
    const auto body = r.json();  // kept: the loop below walks into it
    const auto& events = body.at("events").as_array();
    if (events.empty()) return out;
    for (const auto& e : events) out.push_back(e.at("id").as_int64());
  }
}

}  // namespace

TEST_CASE("channels: an idle session leaves memory and its ids, resumes and followers go on as before") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_CHANNEL_IDLE", "0.3"}});
  const auto port = gw.port();
  const std::string sid = runs::create_mock_session(port, R"({"tokens":5})");

  auto first = runs::run_message(port, sid, "first");
  REQUIRE(first->parser.has_done());
  const reference ref1 = reference_from(first->parser);
  const std::int64_t last1 = ref1.last();
  REQUIRE(last1 == 8);  // status, 5 tokens, usage, done
  first.reset();
  REQUIRE(evicted(port, 1));
  CHECK(runs::get_session(port, sid).at("last_event_id").as_int64() == last1);

  // A follower comes back with its cursor: the channel is made again from the store.
  auto follower = open_events(port, sid, last1);
  REQUIRE(follower->head.status == 200);
  REQUIRE(runs::eventually([&] { return metric(port, "gateway_session_channels") == 1; }, 10s));
  auto second = runs::run_message(port, sid, "second");
  REQUIRE(second->parser.has_done());
  const auto run2 = numbered(second->parser);
  REQUIRE(!run2.empty());
  // No id given out twice: the second run numbers on from the first.
  CHECK(*run2.front()->id == last1 + 1);
  for (std::size_t i = 1; i < run2.size(); ++i) CHECK(*run2[i]->id == *run2[i - 1]->id + 1);
  REQUIRE(follower->read_until([](const sse_parser& p) { return p.has_done(); }, 20s));
  const auto followed = numbered(follower->parser);
  REQUIRE(followed.size() == run2.size());
  for (std::size_t i = 0; i < run2.size(); ++i) CHECK(followed[i]->raw == run2[i]->raw);

  // Gone again once the follower left; then a resume from the start, from the log.
  follower->disconnect();
  REQUIRE(evicted(port, 2));
  reference all = ref1;
  for (const auto* f : run2) all.frames.push_back(*f);
  const std::int64_t last = all.last();
  auto resumed = open_events(port, sid, 0);
  REQUIRE(read_numbered(*resumed, static_cast<std::size_t>(last)));
  CHECK(resume_problem(*resumed, 0, all).empty());
  INFO(resume_problem(*resumed, 0, all));
  resumed->disconnect();

  // The JSON cursor of a dropped channel reads the log too.
  REQUIRE(evicted(port, 3));
  std::vector<std::int64_t> expected;
  for (std::int64_t id = 1; id <= last; ++id) expected.push_back(id);
  CHECK(json_ids(port, sid) == expected);
}

TEST_CASE("channels: with GATEWAY_CHANNEL_IDLE=0 a session's channel stays") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_CHANNEL_IDLE", "0"}});
  const auto port = gw.port();
  const std::string sid = runs::create_mock_session(port, R"({"tokens":2})");
  REQUIRE(runs::run_message(port, sid, "hello")->parser.has_done());
  std::this_thread::sleep_for(500ms);
  CHECK(metric(port, "gateway_session_channels") == 1);
  CHECK(metric(port, "gateway_session_channels_evicted_total") == 0);
}

TEST_CASE("channels: an event only the journal holds keeps its channel until it is in a segment, so no id is given twice") {
  // An event of no run is journal-only for one to two seconds (docs/streaming.md, "The event
  // log"), while a read of the session's last id sees only segments: the channel must wait.
  gateway_process gw(gateway_process::env_map{{"GATEWAY_CHANNEL_IDLE", "0.2"}});
  const auto port = gw.port();
  const std::string sid = runs::create_mock_session(port, R"({"tokens":2})");
  REQUIRE(runs::run_message(port, sid, "first")->parser.has_done());
  REQUIRE(evicted(port, 1));
  const std::int64_t last1 = runs::get_session(port, sid).at("last_event_id").as_int64();

  auto custom =
      http_call(port, "POST", events_path(sid), R"({"type":"custom","data":{"n":1}})", {{"Content-Type", "application/json"}});
  REQUIRE(custom.status == 201);
  const std::int64_t custom_id = custom.json().at("id").as_int64();
  CHECK(custom_id == last1 + 1);
  REQUIRE(evicted(port, 2));

  auto second = runs::run_message(port, sid, "second");
  REQUIRE(second->parser.has_done());
  const auto run2 = numbered(second->parser);
  REQUIRE(!run2.empty());
  CHECK(*run2.front()->id == custom_id + 1);
  const std::int64_t last = *run2.back()->id;  // before the stream (which holds the frames) goes
  second.reset();
  REQUIRE(evicted(port, 3));
  std::vector<std::int64_t> expected;
  for (std::int64_t id = 1; id <= last; ++id) expected.push_back(id);
  CHECK(json_ids(port, sid) == expected);
}

TEST_CASE("channels: runs, events of no run and reads racing constant evictions give every id once, in the log") {
  // Channels go 10 ms after their last activity while four clients keep coming back to
  // the same sessions: every request meets a channel that is going, gone or just made.
  gateway_process gw(gateway_process::env_map{{"GATEWAY_CHANNEL_IDLE", "0.01"}});
  const auto port = gw.port();
  std::vector<std::string> sids;
  for (int i = 0; i < 6; ++i) sids.push_back(runs::create_mock_session(port, R"({"tokens":3})"));

  std::mutex mutex;
  std::map<std::string, std::vector<std::int64_t>> acknowledged;  // ids handed to clients, per session
  std::vector<std::string> problems;
  std::atomic<int> runs_done{0}, customs_done{0};
  std::function<void(unsigned)> client_loop;
  auto client = [&](unsigned seed) {
    try {
      client_loop(seed);
    } catch (const std::exception& e) {  // a thread must not throw: the test would abort
      std::lock_guard lock(mutex);
      problems.push_back(std::string("client: ") + e.what());
    }
  };
  client_loop = [&](unsigned seed) {
    std::mt19937 rnd(seed);
    const auto end = clock_type::now() + 6s;
    while (clock_type::now() < end) {
      const std::string& sid = sids[rnd() % sids.size()];
      const unsigned op = rnd() % 10;
      std::vector<std::int64_t> ids;
      if (op < 5) {
        auto r = runs::start_message(port, sid, "hi");
        if (r->head.status == 409) continue;  // another client's run is live
        if (r->head.status != 200 || !r->read_to_end(20s)) {
          std::lock_guard lock(mutex);
          problems.push_back("run: " + std::to_string(r->head.status) + " " + r->head.body);
          continue;
        }
        // Its own events (the stream also carries the session's events of no run meanwhile).
        for (const auto* f : numbered(r->parser))
          if (f->event != "custom") ids.push_back(*f->id);
        runs_done++;
      } else if (op < 8) {
        auto r =
            http_call(port, "POST", events_path(sid), R"({"type":"custom","data":{}})", {{"Content-Type", "application/json"}});
        if (r.status != 201) {
          std::lock_guard lock(mutex);
          problems.push_back("custom: " + std::to_string(r.status) + " " + r.body);
          continue;
        }
        ids.push_back(r.json().at("id").as_int64());
        customs_done++;
      } else {
        auto r = http_call(port, "GET", events_path(sid) + "?after=0&limit=1000", {}, {{"Accept", "application/json"}});
        if (r.status != 200) {
          std::lock_guard lock(mutex);
          problems.push_back("read: " + std::to_string(r.status) + " " + r.body);
        }
      }
      {
        std::lock_guard lock(mutex);
        auto& mine = acknowledged[sid];
        mine.insert(mine.end(), ids.begin(), ids.end());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(rnd() % 25));  // room for evictions
    }
  };
  std::vector<std::thread> clients;
  for (unsigned i = 0; i < 4; ++i) clients.emplace_back(client, i + 1);
  for (auto& t : clients) t.join();
  INFO("problems: " << (problems.empty() ? std::string() : problems.front()));
  CHECK(problems.empty());
  CHECK(runs_done > 20);
  CHECK(customs_done > 10);
  CHECK(metric(port, "gateway_session_channels_evicted_total") > 20);

  for (const auto& sid : sids) {
    CAPTURE(sid);
    // Events of no run become segments within two seconds; the log is read whole then.
    std::vector<std::int64_t> log;
    const auto deadline = clock_type::now() + 10s;
    auto acked = acknowledged[sid];
    std::sort(acked.begin(), acked.end());
    CHECK(std::adjacent_find(acked.begin(), acked.end()) == acked.end());  // no id handed out twice
    do {
      std::this_thread::sleep_for(100ms);
      log = json_ids(port, sid);
    } while (!acked.empty() && (log.empty() || log.back() < acked.back()) && clock_type::now() < deadline);
    for (std::size_t i = 0; i < log.size(); ++i) CHECK(log[i] == static_cast<std::int64_t>(i + 1));
    std::vector<std::int64_t> missing;
    std::set_difference(acked.begin(), acked.end(), log.begin(), log.end(), std::back_inserter(missing));
    INFO("log holds " << log.size() << " events; acknowledged and missing: " << missing.size() << ", first "
                      << (missing.empty() ? 0 : missing.front()));
    CHECK(missing.empty());  // every one is in the log
  }
}
