// Resuming a finished run: GET /sessions/{id}/events with Last-Event-ID (header
// or ?last_event_id=) and POST /sessions/{id}/messages with Last-Event-ID, at
// every id of a run, from the ring and from the durable log, across restarts;
// and the 400/404 answers to bad cursors and unknown sessions.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/resume_support.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::resume;
using namespace std::chrono_literals;

namespace {

const std::string unknown_session = "00000000-0000-4000-8000-000000000000";

bool has_done(const sse_parser& p) { return p.has_done(); }

// Checks one GET /events resume from `cursor`: the replay, then an open, silent stream.
std::string get_resume_problem(std::uint16_t port, const std::string& sid, std::int64_t cursor, const reference& ref,
                               cursor_via via, bool check_stays_open) {
  auto r = open_events(port, sid, cursor, via);
  if (r->head.status != 200) return "status " + std::to_string(r->head.status) + " " + r->head.body;
  if (!read_numbered(*r, static_cast<std::size_t>(ref.last() - cursor)))
    return "timed out with " + std::to_string(r->parser.frames.size()) + " frames (ended " + std::to_string(r->ended) + ", eof " +
           std::to_string(r->eof) + "): " + r->parser.body.substr(0, 300);
  std::string why = resume_problem(*r, cursor, ref);
  if (check_stays_open) {
    // No run is live: after the replay the stream stays open and sends nothing more.
    r->read_until([](const sse_parser&) { return false; }, 300ms);
    if (r->ended || r->eof) why += "the stream ended after the replay; ";
    if (r->parser.frames.size() != static_cast<std::size_t>(ref.last() - cursor) + 1) why += "frames after the replay; ";
  }
  return why;
}

}  // namespace

TEST_CASE("resume: every id of a 500-token run replays the rest byte for byte, from the ring and from the log") {
  // A ring of 16: of the 503 events only the newest 16 are in memory, every older
  // cursor is served from the SQLite log (and crosses over to the ring at its end).
  gateway_process gw(gateway_process::env_map{{"GATEWAY_SSE_BUFFER_SIZE", "16"}});
  const auto port = gw.port();
  const std::string sid = runs::create_mock_session(port, R"({"tokens":500})");

  // A follower from before the run. It also keeps the ring filled after the run (an
  // idle session with no subscriber releases its ring and resumes read the log only).
  auto follower = open_events(port, sid);
  REQUIRE(follower->head.status == 200);
  auto original = runs::run_message(port, sid, "five hundred tokens please");
  const std::string run_id = original->head.header("X-Run-Id");
  runs::check_run_stream(*original, run_id);
  const reference ref = reference_from(original->parser);
  REQUIRE(ref.last() == 503);  // status, 500 tokens, usage, done
  CHECK(original->parser.count("token") == 500);
  REQUIRE(follower->read_until(has_done, 15s));
  CHECK(follower->parser.body == "retry: 3000\n" + ref.after(0));

  auto session = runs::get_session(port, sid);
  CHECK(session.at("last_event_id") == 503);
  CHECK(session.at("message_count") == 2);
  CHECK(session.at("run").is_null());

  SUBCASE("GET /events with the Last-Event-ID header at every id, 0 to the last") {
    int failures = 0;
    for (std::int64_t n = 0; n <= ref.last(); ++n) {
      // The stream staying open (and silent) is checked at a few ids: 0, ring, log, last.
      const bool check_open = n == 0 || n == 250 || n == 495 || n == ref.last();
      const std::string why = get_resume_problem(port, sid, n, ref, cursor_via::header, check_open);
      if (!why.empty()) {
        FAIL_CHECK("Last-Event-ID: " << n << ": " << why);
        if (++failures >= 5) break;
      }
    }
    CHECK(failures == 0);
  }

  SUBCASE("GET /events?last_event_id=N") {
    for (std::int64_t n : {std::int64_t{0}, std::int64_t{250}, std::int64_t{495}, ref.last()}) {
      CAPTURE(n);
      const std::string why = get_resume_problem(port, sid, n, ref, cursor_via::query, n == 250);
      CHECK_MESSAGE(why.empty(), why);
    }
  }

  SUBCASE("POST /messages with Last-Event-ID replays, stores nothing, and ends when nothing runs") {
    // fetch-event-source re-sends the original POST (whatever its body) with the header.
    const std::vector<std::string> bodies{R"({"content":"five hundred tokens please"})", R"({})", R"({"content":""})"};
    std::size_t b = 0;
    for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{250}, std::int64_t{487}, std::int64_t{495},
                           ref.last() - 1, ref.last()}) {
      CAPTURE(n);
      const std::string& body = bodies[b++ % bodies.size()];
      CAPTURE(body);
      auto r = open_post_resume(port, sid, std::to_string(n), body);
      REQUIRE(r->head.status == 200);
      CHECK(r->head.header("X-Run-Id").empty());  // no run is followed
      CHECK(r->head.header("Content-Location") == "/sessions/" + sid + "/events");
      CHECK(r->read_to_end(15s));
      const std::string why = resume_problem(*r, n, ref, /*complete=*/true);
      CHECK_MESSAGE(why.empty(), why);
    }
    auto after = runs::get_session(port, sid);
    CHECK(after.at("message_count") == 2);
    CHECK(after.at("last_event_id") == 503);
    CHECK(after.at("run").is_null());
    CHECK(runs::get_messages(port, sid).size() == 2);
  }
}

TEST_CASE("resume: a replay through the log is not cut when the ring is larger than the subscriber queue allows") {
  // Queue 1024 (log pages of 256) and a ring of 1000: a replay older than the ring ends
  // with a ring tail of ~1000 frames, more than the queue minus a page. A client that
  // reads at full speed must still get everything, without being taken for a slow one.
  gateway_process gw(gateway_process::env_map{{"GATEWAY_SSE_SUBSCRIBER_QUEUE", "1024"}, {"GATEWAY_SSE_BUFFER_SIZE", "1000"}});
  const auto port = gw.port();
  const std::string sid = runs::create_mock_session(port, R"({"tokens":2000})");
  auto follower = open_events(port, sid);  // keeps the ring filled after the run
  REQUIRE(follower->head.status == 200);
  auto original = runs::start_message(port, sid, "go");
  REQUIRE(original->head.status == 200);
  // Both read as the run goes (an unread follower would be a slow subscriber).
  std::vector<sse_reader*> both{original.get(), follower.get()};
  REQUIRE(pump_all(
              both, [&](std::size_t i) { return i == 0 ? original->ended : follower->parser.has_done(); }, 30s)
              .empty());
  runs::check_run_stream(*original, original->head.header("X-Run-Id"));
  const reference ref = reference_from(original->parser);
  REQUIRE(ref.last() == 2003);
  for (std::int64_t n : {std::int64_t{0}, std::int64_t{500}, std::int64_t{900}, std::int64_t{1000}, std::int64_t{1002}}) {
    for (int round = 0; round < 4; ++round) {
      CAPTURE(n);
      CAPTURE(round);
      const std::string why = get_resume_problem(port, sid, n, ref, cursor_via::header, false);
      CHECK_MESSAGE(why.empty(), why);
    }
  }
  CHECK(metric(port, "gateway_sse_slow_subscribers_dropped_total") == 0);
}

TEST_CASE("resume: after SIGTERM and after kill -9 every replay comes from the durable log, byte for byte") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_SSE_BUFFER_SIZE", "16"}});
  const std::string sid = runs::create_mock_session(gw.port(), R"({"tokens":300})");
  auto first = runs::run_message(gw.port(), sid, "one");
  auto second = runs::run_message(gw.port(), sid, "two");
  runs::check_run_stream(*first, first->head.header("X-Run-Id"));
  runs::check_run_stream(*second, second->head.header("X-Run-Id"));
  reference ref = reference_from(first->parser);
  for (const auto& f : second->parser.frames) ref.frames.push_back(f);
  REQUIRE(ref.last() == 606);
  REQUIRE(*second->parser.frames.front().id == 304);

  auto check_replays = [&](const char* when) {
    CAPTURE(when);
    const auto port = gw.port();
    auto session = runs::get_session(port, sid);
    CHECK(session.at("last_event_id") == ref.last());
    CHECK(session.at("message_count") == 4);
    CHECK(session.at("run").is_null());
    for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{150}, std::int64_t{303}, std::int64_t{304},
                           std::int64_t{450}, ref.last() - 1, ref.last()}) {
      CAPTURE(n);
      const std::string why = get_resume_problem(port, sid, n, ref, cursor_via::header, false);
      CHECK_MESSAGE(why.empty(), why);
    }
    auto post = open_post_resume(port, sid, "303");
    REQUIRE(post->head.status == 200);
    CHECK(post->read_to_end(15s));
    const std::string why = resume_problem(*post, 303, ref, true);
    CHECK_MESSAGE(why.empty(), why);
  };

  check_replays("before any restart");
  CHECK(gw.terminate() == 0);
  gw.start();
  check_replays("after SIGTERM");
  gw.kill9();
  gw.start();
  check_replays("after kill -9");

  // Ids go on after the restarts, and a resume spans the old runs and the new one.
  auto third = runs::run_message(gw.port(), sid, "three");
  runs::check_run_stream(*third, third->head.header("X-Run-Id"));
  REQUIRE(*third->parser.frames.front().id == ref.last() + 1);
  for (const auto& f : third->parser.frames) ref.frames.push_back(f);
  const std::string why = get_resume_problem(gw.port(), sid, 300, ref, cursor_via::query, true);
  CHECK_MESSAGE(why.empty(), why);
}

TEST_CASE("resume: a bad Last-Event-ID is a 400 with the contract's error body, an unknown session a 404") {
  gateway_process gw;
  const auto port = gw.port();
  const std::string sid = runs::create_mock_session(port, R"({"tokens":3})");
  runs::run_message(port, sid, "x");
  REQUIRE(runs::get_session(port, sid).at("last_event_id") == 6);
  const std::string fresh = runs::create_session(port);  // no event yet

  // Not a non-negative decimal integer, out of int64 range, or beyond the last id (6).
  const std::vector<std::string> bad{"-1",
                                     "abc",
                                     "1.5",
                                     "99999999999999999999999",
                                     "9223372036854775808",
                                     "7",
                                     "1000",
                                     "9223372036854775807",
                                     "+3",
                                     "0x1",
                                     "1e2",
                                     "3 4",
                                     "3a",
                                     "",
                                     "-0"};
  SUBCASE("GET /events, Last-Event-ID header") {
    for (const auto& v : bad) {
      CAPTURE(v);
      auto r = http_call(port, "GET", events_path(sid), {}, {{"Accept", "text/event-stream"}, {"Last-Event-ID", v}});
      fixtures::check_error(r, 400, "bad_request");
    }
    // On a session with no event yet, 1 is beyond its last id; 0 is a valid cursor there.
    fixtures::check_error(http_call(port, "GET", events_path(fresh), {}, {{"Last-Event-ID", "1"}}), 400, "bad_request");
    auto zero = open_events(port, fresh, std::int64_t{0});
    REQUIRE(zero->head.status == 200);
    REQUIRE(zero->read_until([](const sse_parser& p) { return !p.frames.empty(); }, 10s));
    CHECK(reconnected_problem(zero->parser.frames.front(), 0, 0, std::nullopt).empty());
  }
  SUBCASE("GET /events?last_event_id=") {
    std::vector<std::string> bad_query{"-1", "abc",  "1.5", "99999999999999999999999", "7", "%203", "%2B3", "+3",
                                       "",   "3%20", "0x1"};
    for (const auto& v : bad_query) {
      CAPTURE(v);
      auto r = http_call(port, "GET", events_path(sid) + "?last_event_id=" + v, {}, {{"Accept", "text/event-stream"}});
      fixtures::check_error(r, 400, "bad_request");
    }
  }
  SUBCASE("POST /messages with a bad Last-Event-ID stores nothing") {
    for (const auto& v : bad) {
      CAPTURE(v);
      auto r = http_call(port, "POST", runs::messages_path(sid), R"({"content":"again"})",
                         {{"Content-Type", "application/json"}, {"Last-Event-ID", v}});
      fixtures::check_error(r, 400, "bad_request");
    }
    auto s = runs::get_session(port, sid);
    CHECK(s.at("message_count") == 2);
    CHECK(s.at("last_event_id") == 6);
    CHECK(s.at("run").is_null());
  }
  SUBCASE("header whitespace is not part of the value (RFC 9110 5.5): ' 3' is the cursor 3") {
    const reference ref = [&] {
      auto all = open_events(port, sid, std::int64_t{0});
      REQUIRE(read_numbered(*all, 6));
      reference out;
      for (std::size_t i = 1; i < all->parser.frames.size(); ++i) out.frames.push_back(all->parser.frames[i]);
      return out;
    }();
    auto r = open_events(port, sid, std::string(" 3"));
    REQUIRE(r->head.status == 200);
    REQUIRE(read_numbered(*r, 3));
    const std::string why = resume_problem(*r, 3, ref);
    CHECK_MESSAGE(why.empty(), why);
  }
  SUBCASE("unknown sessions are 404") {
    fixtures::check_error(http_call(port, "GET", events_path(unknown_session), {}, {{"Last-Event-ID", "0"}}), 404, "not_found");
    fixtures::check_error(http_call(port, "GET", events_path(unknown_session) + "?last_event_id=0", {}, {}), 404, "not_found");
    fixtures::check_error(http_call(port, "GET", events_path(unknown_session), {}, {}), 404, "not_found");
    fixtures::check_error(http_call(port, "POST", runs::messages_path(unknown_session), R"({"content":"x"})",
                                    {{"Content-Type", "application/json"}, {"Last-Event-ID", "0"}}),
                          404, "not_found");
  }
}
