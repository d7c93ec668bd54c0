// Retention is prompt: with GATEWAY_EVENT_RETENTION=N, as soon as a run's done is
// visible the log holds only the session's newest N events, and a resume older
// than that is told so (gap: true, oldest_event_id) right away.
#include <doctest/doctest.h>

#include <string>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/resume_support.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::resume;
using namespace std::chrono_literals;

TEST_CASE("retention: right after done, the log holds the newest N events and an older resume sees the gap") {
  constexpr std::int64_t retention = 50;
  constexpr std::int64_t events = 303;  // status, 300 tokens, usage, done
  struct row {
    const char* ring;            // GATEWAY_SSE_BUFFER_SIZE
    std::int64_t lowest_oldest;  // the oldest id a resume may be offered (memory may hold more than the log)
  };
  // A ring larger than the retention may still serve what it holds; a small one leaves it to the log.
  const row rows[] = {{"100", events - 100 + 1}, {"10", events - retention + 1}};
  for (const auto& r : rows) {
    CAPTURE(r.ring);
    gateway_process gw(
        gateway_process::env_map{{"GATEWAY_EVENT_RETENTION", std::to_string(retention)}, {"GATEWAY_SSE_BUFFER_SIZE", r.ring}});
    const auto port = gw.port();
    const std::string sid = runs::create_mock_session(port, R"({"tokens":300})");
    auto post = runs::run_message(port, sid, "go");
    REQUIRE(post->parser.has_done());
    const reference ref = reference_from(post->parser);
    REQUIRE(ref.last() == events);

    // At once, from the very first id: the gap is reported, and what follows is consecutive to done.
    auto resumed = open_events(port, sid, 1);
    REQUIRE(resumed->head.status == 200);
    REQUIRE(resumed->read_until([](const sse_parser& p) { return p.has_done(); }, 10s));
    const auto& reconnected = resumed->parser.frames.front();
    REQUIRE(reconnected.event == "reconnected");
    INFO("reconnected: " << reconnected.data_text);
    CHECK(reconnected.obj().at("gap").as_bool());
    const std::int64_t oldest = reconnected.obj().at("oldest_event_id").as_int64();
    CHECK(oldest >= r.lowest_oldest);
    CHECK(oldest <= events - retention + 1);
    CHECK(reconnected.obj().at("replayed").as_int64() == events - oldest + 1);
    const auto got = numbered(resumed->parser);
    REQUIRE(!got.empty());
    CHECK(*got.front()->id == oldest);
    for (const auto* f : got) CHECK(f->raw == ref.at(*f->id).raw);
    CHECK(*got.back()->id == events);

    // The durable log itself holds only the newest N events.
    if (!runs::sqlite3_available()) {
      MESSAGE("sqlite3 CLI not found: the log's rows were not checked");
      continue;
    }
    auto [status, out] = runs::sqlite3_exec(
        gw.db_path(), "SELECT min(first_id), max(last_id) FROM event_batches WHERE session_id = '" + sid + "';");
    REQUIRE(status == 0);
    CHECK(out == std::to_string(events - retention + 1) + "|" + std::to_string(events) + "\n");
  }
}
