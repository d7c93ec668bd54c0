// A subscriber that stops reading slows neither the run nor the other followers and
// is never cut for being slow: it catches up when it reads again. Only one whose
// writes make no progress for the write timeout is cut, and it resumes without
// loss. Deleting a session ends its followers.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
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

// Empty when the numbered frames are consecutive from after_id + 1 and byte-identical to `ref`'s.
std::string sequence_problem(const sse_parser& p, std::int64_t after_id, const reference& ref) {
  std::int64_t want = after_id + 1;
  for (const auto* f : numbered(p)) {
    if (*f->id != want) return "id " + std::to_string(*f->id) + " where " + std::to_string(want) + " was due";
    if (want > ref.last()) return "id " + std::to_string(want) + " beyond the reference";
    if (f->raw != ref.at(want).raw) return "frame " + std::to_string(want) + " differs: " + f->raw;
    ++want;
  }
  return "";
}

// How late a paced run's tokens reached a reader: token i is due i/rate after the
// first; its lateness is measured against the reader's best-delivered token (a
// constant latency is not lateness). The p99 over the run, in microseconds.
std::int64_t token_lateness_p99_us(const sse_parser& p, double rate) {
  std::vector<clock_type::time_point> arrivals;
  for (const auto& f : p.frames)
    if (f.event == "token") arrivals.push_back(f.received);
  REQUIRE(!arrivals.empty());
  auto slot = [rate](std::size_t i) {
    return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(static_cast<double>(i) / rate));
  };
  auto best = arrivals[0];
  for (std::size_t i = 1; i < arrivals.size(); ++i) best = std::min(best, arrivals[i] - slot(i));
  std::vector<std::int64_t> late;
  for (std::size_t i = 0; i < arrivals.size(); ++i)
    late.push_back(std::chrono::duration_cast<std::chrono::microseconds>(arrivals[i] - slot(i) - best).count());
  std::sort(late.begin(), late.end());
  return late[late.size() * 99 / 100];
}

// One run followed by a fast reader (and the run's own POST stream, also read);
// returns the time from the POST to the follower's done.
struct followed_run {
  std::unique_ptr<sse_reader> post;
  std::unique_ptr<sse_reader> fast;
  std::chrono::milliseconds fast_done{0};
};

followed_run follow_run(std::uint16_t port, const std::string& sid) {
  followed_run out;
  out.fast = open_events(port, sid);
  REQUIRE(out.fast->head.status == 200);
  const auto t0 = clock_type::now();
  out.post = runs::start_message(port, sid, "steady");
  REQUIRE(out.post->head.status == 200);
  std::vector<sse_reader*> readers{out.fast.get(), out.post.get()};
  std::optional<clock_type::time_point> fast_at;
  auto left = pump_all(
      readers,
      [&](std::size_t i) {
        if (i == 0 && !fast_at && out.fast->parser.has_done()) fast_at = clock_type::now();
        return i == 0 ? out.fast->parser.has_done() : out.post->ended;
      },
      60s);
  INFO("fast follower: " << out.fast->parser.frames.size() << " frames, eof " << out.fast->eof
                         << "; post: " << out.post->parser.frames.size() << " frames, eof " << out.post->eof);
  REQUIRE(left.empty());
  out.fast_done = std::chrono::duration_cast<std::chrono::milliseconds>(*fast_at - t0);
  return out;
}

// One measurement on a fresh server: a run followed with no stalled subscriber, then
// the same run on another session with one.
struct stalled_attempt {
  std::unique_ptr<gateway_process> gw;  // declared first: destroyed after its clients
  followed_run baseline;
  std::string sid;
  std::unique_ptr<sse_reader> stalled;
  double dropped_before = 0;
  double behind_before = 0;
  followed_run run;
  std::int64_t late_with = 0;
  std::int64_t late_without = 0;
};

// The best the fast follower did without a stalled subscriber, over the attempts so
// far. A pause in a run without one only raises its figures, so the best of them is
// the bar: a pause there never loosens it.
struct punctuality_bar {
  // Allowed with a stalled subscriber: up to 500 ms later to done, and up to 5 ms more
  // token lateness at p99.
  static constexpr std::chrono::milliseconds done_slack{500};
  static constexpr std::int64_t late_slack_us = 5000;

  std::chrono::milliseconds done = std::chrono::milliseconds::max();
  std::int64_t late_us = std::numeric_limits<std::int64_t>::max();

  void lower_to(const stalled_attempt& a) {
    done = std::min(done, a.baseline.fast_done);
    late_us = std::min(late_us, a.late_without);
  }
  bool met_by(const stalled_attempt& a) const {
    return a.run.fast_done < done + done_slack && a.late_with <= late_us + late_slack_us;
  }
};

constexpr const char* stalled_mock = R"({"tokens":6000,"tokens_per_second":2000})";

void measure(stalled_attempt& a) {
  // A queue of 1024 frames per subscriber, and a stalled reader with a small TCP window
  // (~30 KB of frames fit in the kernel buffers): it is over its bound a second into the run.
  a.gw = std::make_unique<gateway_process>(gateway_process::env_map{{"GATEWAY_SSE_SUBSCRIBER_QUEUE", "1024"}});
  const auto port = a.gw->port();
  a.baseline = follow_run(port, runs::create_mock_session(port, stalled_mock));
  a.sid = runs::create_mock_session(port, stalled_mock);
  a.stalled = open_events(port, a.sid, std::nullopt, cursor_via::header, /*receive_buffer=*/2048);
  REQUIRE(a.stalled->head.status == 200);
  a.dropped_before = metric(port, "gateway_sse_slow_subscribers_dropped_total");
  a.behind_before = metric(port, "gateway_sse_subscribers_behind_total");
  // From here the stalled subscriber reads nothing until the run is over.
  a.run = follow_run(port, a.sid);
  a.late_with = token_lateness_p99_us(a.run.fast->parser, 2000);
  a.late_without = token_lateness_p99_us(a.baseline.fast->parser, 2000);
}

}  // namespace

TEST_CASE("resume: a stalled subscriber slows neither the run nor a fast one, and gets every event once it reads") {
  // Token by token, the fast follower is as punctual with the stalled subscriber as
  // without. Each figure is one run on a machine shared with other work, where a pause
  // of a few tens of milliseconds can land in any run (docs/streaming.md, "How late the
  // machine wakes a thread"); so a miss is measured again on a fresh server, up to eight
  // times, against the best run without a stalled subscriber so far. A stalled
  // subscriber that made the others more than 5 ms later at p99 misses every attempt.
  std::optional<stalled_attempt> a;
  punctuality_bar bar;
  for (int attempt = 1; attempt <= 8; ++attempt) {
    a.reset();  // its readers close before its server stops
    a.emplace();
    measure(*a);
    bar.lower_to(*a);
    MESSAGE("attempt " << attempt << ": fast follower done after " << a->run.fast_done.count()
                       << " ms with a stalled subscriber, " << a->baseline.fast_done.count() << " ms without; token lateness p99 "
                       << a->late_with << " us with, " << a->late_without
                       << " us without (best without so far: " << bar.done.count() << " ms, " << bar.late_us << " us)");
    if (bar.met_by(*a)) break;
  }
  // met_by(), one condition at a time, so that a failure shows the figures.
  CHECK(a->run.fast_done.count() < (bar.done + punctuality_bar::done_slack).count());
  CHECK(a->late_with <= bar.late_us + punctuality_bar::late_slack_us);

  const auto port = a->gw->port();
  const std::string run_id = a->run.post->head.header("X-Run-Id");
  runs::check_run_stream(*a->run.post, run_id);
  const reference ref = reference_from(a->run.post->parser);
  REQUIRE(ref.last() == 6003);
  const std::string fast_problem = sequence_problem(a->run.fast->parser, 0, ref);
  CHECK_MESSAGE(fast_problem.empty(), fast_problem);
  CHECK(a->run.fast->parser.count("token") == 6000);
  CHECK(runs::get_session(port, a->sid).at("run").is_null());  // the run is over while the stalled one still is

  // The stalled subscriber fell behind (the server stopped pushing to it) but was not cut ...
  CHECK(metric(port, "gateway_sse_subscribers_behind_total") >= a->behind_before + 1);
  CHECK(metric(port, "gateway_sse_slow_subscribers_dropped_total") == a->dropped_before);
  // The POST's stream closes after its last write, which the client may have read already.
  CHECK(runs::eventually([&] { return metric(port, "gateway_sse_streams_open") == 3; }, 10s));
  // ... and once it reads, it gets every event of the run once, in order, from the log.
  auto& stalled = *a->stalled;
  const bool complete = stalled.read_until([](const sse_parser& p) { return p.has_done(); }, 20s);
  INFO("stalled subscriber: " << stalled.parser.frames.size() << " frames, last id " << stalled.parser.last_id());
  REQUIRE(complete);
  const std::string problem = sequence_problem(stalled.parser, 0, ref);
  CHECK_MESSAGE(problem.empty(), problem);
  CHECK(numbered(stalled.parser).size() == static_cast<std::size_t>(ref.last()));
  CHECK(!stalled.eof);  // a follower stays subscribed after the run
}

TEST_CASE("resume: a subscriber whose writes make no progress for the write timeout is cut, and resumes without loss") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_SSE_SUBSCRIBER_QUEUE", "1024"}, {"GATEWAY_WRITE_TIMEOUT", "1"}});
  const auto port = gw.port();
  const char* mock = R"({"tokens":6000,"tokens_per_second":2000})";
  const std::string sid = runs::create_mock_session(port, mock);
  auto stalled = open_events(port, sid, std::nullopt, cursor_via::header, /*receive_buffer=*/2048);
  REQUIRE(stalled->head.status == 200);
  const double dropped_before = metric(port, "gateway_sse_slow_subscribers_dropped_total");
  auto run = follow_run(port, sid);
  const reference ref = reference_from(run.post->parser);
  REQUIRE(ref.last() == 6003);
  CHECK(sequence_problem(run.fast->parser, 0, ref).empty());

  // Its write stalled for a second: the server cut it, and only it.
  CHECK(runs::eventually([&] { return metric(port, "gateway_sse_slow_subscribers_dropped_total") == dropped_before + 1; }, 10s));
  CHECK(runs::eventually([&] { return metric(port, "gateway_sse_streams_open") == 1; }, 10s));  // the fast follower
  // What the kernel buffered still arrives, whole frames first; then the connection ends.
  stalled->read_until([](const sse_parser&) { return false; }, 20s);
  const auto got = numbered(stalled->parser);
  MESSAGE("the cut subscriber had " << got.size() << " whole events (" << stalled->raw.size() << " bytes) buffered");
  CHECK(stalled->eof);
  CHECK(!stalled->parser.has_done());
  REQUIRE(got.size() < static_cast<std::size_t>(ref.last()));
  const std::string prefix_problem = sequence_problem(stalled->parser, 0, ref);
  CHECK_MESSAGE(prefix_problem.empty(), prefix_problem);

  // It resumes from the last event it fully received and gets the rest, nothing lost.
  const std::int64_t cursor = got.empty() ? 0 : *got.back()->id;
  auto resumed = open_events(port, sid, cursor);
  REQUIRE(resumed->head.status == 200);
  const bool complete = read_numbered(*resumed, static_cast<std::size_t>(ref.last() - cursor), 20s);
  INFO("resumed from " << cursor << ": " << resumed->parser.frames.size() << " frames, last id " << resumed->parser.last_id());
  REQUIRE(complete);
  const std::string why = resume_problem(*resumed, cursor, ref);
  CHECK_MESSAGE(why.empty(), why);
  CHECK(metric(port, "gateway_sse_slow_subscribers_dropped_total") == dropped_before + 1);
}

TEST_CASE("resume: deleting a session mid-run ends every follower with the aborted run's done, then closes it") {
  gateway_process gw;
  const auto port = gw.port();
  const std::string sid = runs::create_mock_session(port, R"({"tokens":2000,"tokens_per_second":100})");
  auto before = open_events(port, sid);  // live only, from before the run
  REQUIRE(before->head.status == 200);
  auto post = runs::start_message(port, sid, "soon gone");
  REQUIRE(post->head.status == 200);
  const std::string run_id = post->head.header("X-Run-Id");
  REQUIRE(post->read_until([](const sse_parser& p) { return p.count("token") >= 3; }, 10s));
  auto from_zero = open_events(port, sid, std::int64_t{0});  // replay, then live
  auto from_two = open_events(port, sid, std::int64_t{2}, cursor_via::query);
  auto post_resume = open_post_resume(port, sid, "1", R"({"content":"soon gone"})");  // follows the live run
  for (auto* r : {from_zero.get(), from_two.get(), post_resume.get()}) REQUIRE(r->head.status == 200);
  CHECK(post_resume->head.header("X-Run-Id") == run_id);

  struct follower {
    const char* name;
    sse_reader* reader;
    std::int64_t after;
    bool is_run_stream;  // ends with the run's done and the last chunk
  };
  const std::vector<follower> followers{{"GET /events, no cursor", before.get(), 0, false},
                                        {"GET /events, Last-Event-ID 0", from_zero.get(), 0, false},
                                        {"GET /events?last_event_id=2", from_two.get(), 2, false},
                                        {"POST resume from 1", post_resume.get(), 1, true},
                                        {"the run's own POST", post.get(), 0, true}};
  std::vector<sse_reader*> all;
  for (const auto& f : followers) all.push_back(f.reader);
  // Every follower is live (has a token beyond the first few) before the DELETE.
  auto not_live = pump_all(
      all, [&](std::size_t i) { return all[i]->parser.count("token") >= 5; }, 15s);
  REQUIRE(not_live.empty());

  auto deleted = http_call(port, "DELETE", "/sessions/" + sid);
  REQUIRE(deleted.status == 204);
  auto open = pump_all(
      all, [&](std::size_t i) { return all[i]->ended || all[i]->eof; }, 10s);
  CHECK(open.empty());

  const auto& reference_stream = post->parser;
  reference ref = reference_from(reference_stream);
  for (const auto& f : followers) {
    CAPTURE(f.name);
    const auto& p = f.reader->parser;
    INFO("stream: " << p.body.substr(p.body.size() > 600 ? p.body.size() - 600 : 0));
    for (const auto& problem : p.problems) FAIL_CHECK("SSE format: " << problem);
    const auto frames = numbered(p);
    REQUIRE(frames.size() >= 3);
    // The final events: status aborted, usage, done (aborted, holding what was streamed).
    const auto n = frames.size();
    CHECK(frames[n - 3]->event == "status");
    CHECK(frames[n - 3]->obj().at("status") == "aborted");
    CHECK(frames[n - 2]->event == "usage");
    CHECK(frames[n - 1]->event == "done");
    CHECK(p.count("done") == 1);
    const auto& answer = frames[n - 1]->obj().at("assistant_data").as_object();
    CHECK(answer.at("status") == "aborted");
    CHECK(frames[n - 1]->field("run_id") == run_id);
    if (f.after < 2) CHECK(answer.at("content") == runs::jstr(p.tokens()));  // from 2 the first token was skipped
    // The same events, byte for byte, as the run's own stream.
    const std::string why = sequence_problem(p, f.after, ref);
    CHECK_MESSAGE(why.empty(), why);
    CHECK(*frames.back()->id == ref.last());
    // Then the stream ends: a run's stream with its last chunk; a GET follower by the
    // server closing the connection.
    if (f.is_run_stream) {
      CHECK(f.reader->ended);
      CHECK(f.reader->decoder.finished());
    } else {
      CHECK((f.reader->ended || f.reader->eof));
      if (!f.reader->eof) CHECK(f.reader->client().closed_by_peer(5s));
    }
  }

  // The session is gone for every way of following it.
  fixtures::check_error(http_call(port, "GET", "/sessions/" + sid), 404, "not_found");
  fixtures::check_error(http_call(port, "GET", events_path(sid), {}, {}), 404, "not_found");
  fixtures::check_error(http_call(port, "GET", events_path(sid), {}, {{"Last-Event-ID", "0"}}), 404, "not_found");
  fixtures::check_error(http_call(port, "POST", runs::messages_path(sid), R"({"content":"x"})",
                                  {{"Content-Type", "application/json"}, {"Last-Event-ID", "0"}}),
                        404, "not_found");
}

TEST_CASE("resume: deleting an idle session closes its followers") {
  gateway_process gw;
  const auto port = gw.port();
  const std::string sid = runs::create_mock_session(port, R"({"tokens":3})");
  runs::run_message(port, sid, "x");
  auto live_only = open_events(port, sid);
  auto replayed = open_events(port, sid, std::int64_t{0});
  REQUIRE(live_only->head.status == 200);
  REQUIRE(replayed->head.status == 200);
  REQUIRE(read_numbered(*replayed, 6));
  REQUIRE(http_call(port, "DELETE", "/sessions/" + sid).status == 204);
  std::vector<sse_reader*> all{live_only.get(), replayed.get()};
  auto open = pump_all(
      all, [&](std::size_t i) { return all[i]->ended || all[i]->eof; }, 10s);
  CHECK(open.empty());
  // No run was live: there is no final event, the streams just end.
  CHECK(live_only->parser.frames.empty());
  CHECK(replayed->parser.frames.size() == 7);
  for (auto* r : all) {
    for (const auto& problem : r->parser.problems) FAIL_CHECK("SSE format: " << problem);
    CHECK(!r->parser.partial());
  }
}
