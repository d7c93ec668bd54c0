// A reader slower than the run is never cut off: it falls behind, catches up from
// the log at its own pace, and gets every event once, in order, ending with done;
// the run and the other followers do not wait for it, and the server's memory
// stays bounded by a page per lagging reader.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <thread>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/resume_support.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::resume;
using namespace std::chrono_literals;

namespace {

constexpr int run_tokens = 100'000;
constexpr double slow_rate = 20'000;  // events per second the slow reader takes

// The server's resident memory in KiB (VmRSS).
long rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
  return -1;
}

struct timed_run {
  std::unique_ptr<sse_reader> follower;  // GET /events at full speed
  std::unique_ptr<sse_reader> post;      // the run's own stream
  std::chrono::milliseconds follower_done{0};
  long peak_rss_kib = 0;
};

// Starts a full-speed run with a fast follower; the POST stream is read at `post_rate`
// events per second (0: as fast as it comes). Returns when both have the run's done.
timed_run run_with_reader(gateway_process& gw, const std::string& sid, double post_rate) {
  const auto port = gw.port();
  timed_run out;
  out.follower = open_events(port, sid);
  REQUIRE(out.follower->head.status == 200);
  const auto t0 = clock_type::now();
  out.post = std::make_unique<sse_reader>(port, /*receive_buffer=*/64 * 1024);
  out.post->send("POST", runs::messages_path(sid), runs::message_body("go"), {{"Content-Type", "application/json"}});
  REQUIRE(out.post->head.status == 200);
  const auto deadline = t0 + 60s;
  auto last_rss = t0;
  while (clock_type::now() < deadline) {
    bool busy = false;
    if (!out.follower->parser.has_done()) {
      for (int k = 0; k < 16 && out.follower->pump(0ms); ++k) busy = true;
      if (out.follower->parser.has_done())
        out.follower_done = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0);
    }
    // The slow reader takes no more than post_rate events per second since the start.
    const double allowed = post_rate > 0 ? std::chrono::duration<double>(clock_type::now() - t0).count() * post_rate : 1e18;
    if (!out.post->ended && static_cast<double>(out.post->parser.frames.size()) < allowed && out.post->pump(0ms)) busy = true;
    if (clock_type::now() - last_rss > 100ms) {
      out.peak_rss_kib = std::max(out.peak_rss_kib, rss_kib(gw.pid()));
      last_rss = clock_type::now();
    }
    if (out.follower->parser.has_done() && (out.post->ended || out.post->eof)) break;
    if (!busy) std::this_thread::sleep_for(1ms);
  }
  return out;
}

}  // namespace

TEST_CASE("slow reader: a 100,000-event run read at 20,000 events/s arrives whole; the run does not wait for it") {
  gateway_process gw;
  const auto port = gw.port();
  const std::string mock = R"({"tokens":)" + std::to_string(run_tokens) + "}";

  // The same run read at full speed, for comparison.
  const std::string fast_sid = runs::create_mock_session(port, mock);
  auto fast = run_with_reader(gw, fast_sid, 0);
  REQUIRE(fast.post->ended);
  const long rss_before = rss_kib(gw.pid());

  const std::string sid = runs::create_mock_session(port, mock);
  const double behind_before = metric(port, "gateway_sse_subscribers_behind_total");
  auto slow = run_with_reader(gw, sid, slow_rate);
  MESSAGE("run read at full speed: follower done after "
          << fast.follower_done.count() << " ms; with a reader at " << slow_rate << " events/s: follower done after "
          << slow.follower_done.count() << " ms, the slow reader got " << slow.post->parser.frames.size() << " frames");
  MESSAGE("server RSS: peak " << fast.peak_rss_kib / 1024 << " MiB during the run read at full speed, " << rss_before / 1024
                              << " MiB after it, peak " << slow.peak_rss_kib / 1024 << " MiB during the slow read");

  // Every event once, in order, ending with done, and a cleanly ended response.
  const std::string run_id = slow.post->head.header("X-Run-Id");
  runs::check_run_stream(*slow.post, run_id);
  const auto got = numbered(slow.post->parser);
  REQUIRE(got.size() == static_cast<std::size_t>(run_tokens + 3));  // status, tokens, usage, done
  for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(*got[i]->id == static_cast<std::int64_t>(i + 1));
  CHECK(slow.post->parser.count("token") == static_cast<std::size_t>(run_tokens));
  CHECK(slow.post->parser.frames.back().event == "done");
  // The follower saw the same events, byte for byte.
  const reference ref = reference_from(slow.follower->parser);
  CHECK(ref.last() == run_tokens + 3);
  for (const auto* f : got) REQUIRE(f->raw == ref.at(*f->id).raw);

  // It really lagged (the server stopped pushing and fed it from memory and the log) ...
  CHECK(metric(port, "gateway_sse_subscribers_behind_total") >= behind_before + 1);
  CHECK(metric(port, "gateway_sse_slow_subscribers_dropped_total") == 0);
  // ... the reading took its time, but the run did not wait for it ...
  CHECK(slow.follower_done < fast.follower_done * 2 + 1000ms);
  CHECK(slow.follower_done * 2 < std::chrono::milliseconds(static_cast<long>(run_tokens / slow_rate * 1000)));
  // ... and the server held about a page for it, not the run's backlog.
  CHECK(slow.peak_rss_kib - rss_before < 64 * 1024);
}
