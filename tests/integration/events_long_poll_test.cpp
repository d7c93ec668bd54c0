// GET /sessions/{id}/events with Accept: application/json: the long-poll cursor.
#include <doctest/doctest.h>

#include <chrono>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::runs;
using namespace std::chrono_literals;

namespace {

const header_list accept_json{{"Accept", "application/json"}};

boost::json::object poll(std::uint16_t port, const std::string& sid, const std::string& query) {
  auto r = http_call(port, "GET", "/sessions/" + sid + "/events?" + query, {}, accept_json);
  REQUIRE(r.status == 200);
  return r.json().as_object();
}

std::vector<std::int64_t> ids_of(const boost::json::object& page) {
  std::vector<std::int64_t> out;
  for (const auto& e : page.at("events").as_array()) out.push_back(e.at("id").as_int64());
  return out;
}

}  // namespace

TEST_CASE("events: the JSON cursor pages through a whole run") {
  gateway_process gw;
  auto sid = create_mock_session(gw.port(), R"({"tokens":5})");
  auto stream = run_message(gw.port(), sid, "hello");
  const std::int64_t last = get_session(gw.port(), sid).at("last_event_id").as_int64();
  REQUIRE(last == 8);  // status, 5 tokens, usage, done

  auto all = poll(gw.port(), sid, "after=0");
  CHECK(ids_of(all) == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(all.at("last_event_id") == 8);
  const auto& first = all.at("events").as_array().at(0).as_object();
  CHECK(first.at("event") == "status");
  CHECK(first.at("data").at("status") == "thinking");
  CHECK(all.at("events").as_array().back().at("event") == "done");

  // Page by page with the returned cursor: every event once, in order.
  std::vector<std::int64_t> seen;
  std::int64_t cursor = 0;
  for (int i = 0; i < 10 && cursor < last; ++i) {
    auto page = poll(gw.port(), sid, "after=" + std::to_string(cursor) + "&limit=3");
    auto ids = ids_of(page);
    CHECK(ids.size() <= 3);
    seen.insert(seen.end(), ids.begin(), ids.end());
    cursor = page.at("last_event_id").as_int64();
  }
  CHECK(seen == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8});
  // Nothing after the end: an empty list and the cursor handed back.
  auto none = poll(gw.port(), sid, "after=8");
  CHECK(none.at("events").as_array().empty());
  CHECK(none.at("last_event_id") == 8);
}

TEST_CASE("events: wait returns empty after the wait, or as soon as an event exists") {
  gateway_process gw;
  auto sid = create_mock_session(gw.port(), R"({"tokens":3,"think_ms":300})");

  auto t0 = std::chrono::steady_clock::now();
  auto empty = poll(gw.port(), sid, "after=0&wait=0.5");
  auto waited = std::chrono::steady_clock::now() - t0;
  CHECK(empty.at("events").as_array().empty());
  CHECK(empty.at("last_event_id") == 0);
  CHECK(waited >= 450ms);
  CHECK(waited < 5s);

  // A poll waiting up to 20 s is answered when the run's first event commits.
  http_client waiting(gw.port(), 30s);
  waiting.send_raw("GET /sessions/" + sid + "/events?after=0&wait=20 HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n\r\n");
  std::this_thread::sleep_for(200ms);
  t0 = std::chrono::steady_clock::now();
  auto stream = start_message(gw.port(), sid, "go");
  auto reply = waiting.read_reply();
  auto answered = std::chrono::steady_clock::now() - t0;
  REQUIRE(reply.status == 200);
  auto page = reply.json().as_object();
  // Answered with the run's first event (status), before its tokens (300 ms later) existed.
  REQUIRE(page.at("events").as_array().size() == 1);
  CHECK(page.at("events").as_array().at(0).at("id") == 1);
  CHECK(page.at("events").as_array().at(0).at("event") == "status");
  CHECK(answered < 250ms);
}

TEST_CASE("events: the JSON cursor pages through a live run, every event once and in order") {
  gateway_process gw;
  auto sid = create_mock_session(gw.port(), R"({"tokens":2000,"tokens_per_second":2000})");
  auto stream = start_message(gw.port(), sid, "go");
  REQUIRE(stream->head.status == 200);
  // Pages of at most 100, each waiting for the next events while the run produces.
  std::vector<boost::json::object> got;
  std::int64_t cursor = 0;
  int polls = 0;
  while (got.empty() || got.back().at("event") != "done") {
    // Every poll returns at least one event (below), so the run's ~2,000 end it; a poll
    // answered as soon as an event exists may well get one or two.
    REQUIRE(++polls <= 2100);
    auto page = poll(gw.port(), sid, "after=" + std::to_string(cursor) + "&limit=100&wait=5");
    const auto& events = page.at("events").as_array();
    REQUIRE_FALSE(events.empty());  // the run is live or just ended: never a wait that runs out
    CHECK(events.size() <= 100);
    for (const auto& e : events) got.push_back(e.as_object());
    CHECK(page.at("last_event_id") == got.back().at("id"));
    cursor = page.at("last_event_id").as_int64();
  }
  // The same events, in the same order, as the run's own stream.
  REQUIRE(stream->read_until([](const sse_parser& p) { return p.has_done(); }, 15s));
  const auto& frames = stream->parser.frames;
  REQUIRE(got.size() == frames.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].at("id") == static_cast<std::int64_t>(i + 1));
    CHECK(got[i].at("id") == *frames[i].id);
    CHECK(got[i].at("event") == boost::json::string(frames[i].event));
    CHECK(got[i].at("data") == boost::json::parse(frames[i].data_text));
  }
  CHECK(polls > 5);  // it was paged while live, not read in one go at the end
}

TEST_CASE("events: bad long-poll parameters are 400") {
  gateway_process gw;
  auto sid = create_mock_session(gw.port(), R"({"tokens":1})");
  for (const char* q : {"after=-1", "after=abc", "wait=abc", "wait=-1", "limit=-5", "after=1&after=2", "bogus=1"}) {
    CAPTURE(q);
    auto r = http_call(gw.port(), "GET", "/sessions/" + sid + "/events?" + q, {}, accept_json);
    CHECK(r.status == 400);
    CHECK(r.json().at("error").at("code") == "bad_request");
  }
  auto missing = http_call(gw.port(), "GET", "/sessions/00000000-0000-0000-0000-000000000000/events?after=0", {}, accept_json);
  CHECK(missing.status == 404);
}
