// SQLite's layout of the live event log (sqlite_event_writer): small batches go to
// the shared journal and are read from the in-memory tail, the tail becomes a
// segment by size, at a run's end or by age, and the journal rows it needed are
// released only then.
#include "persistence/sqlite_event_writer.hpp"

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <optional>

#include "tests/persistence/sqlite_fixture.hpp"

namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using agw::core::frame_ptr;
using agw::persistence::journal_tails;
using agw::persistence::sqlite_event_writer;
using agw::persistence::sqlite_store;
using agw::test::temp_db;

const std::string sid = "s1";

frame_ptr token(std::int64_t id) {
  return std::make_shared<const agw::core::event_frame>(
      agw::core::make_event_frame(id, agw::core::event_type::token, "run-1", "content", "t" + std::to_string(id)));
}
frame_ptr done(std::int64_t id) {
  return std::make_shared<const agw::core::event_frame>(
      agw::core::make_event_frame(id, agw::core::event_type::done, "run-1", {{"assistant_data", boost::json::object{}}}));
}

std::vector<std::int64_t> range(std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = first; i <= last; ++i) out.push_back(i);
  return out;
}

struct fixture {
  explicit fixture(sqlite_event_writer::options opts) : writer(store, tails, opts) {
    auto c = db.open();
    c->insert_session(agw::test::make_session(sid, 1000));
  }
  ~fixture() { store.stop(); }

  // Appends `events` as one batch and runs until the writer says it is committed.
  void append(std::vector<frame_ptr> events, bool ends_run = false, std::size_t retention = 0) {
    std::optional<std::exception_ptr> outcome;
    sqlite_event_writer::batch b;
    b.events = std::move(events);
    b.ends_run = ends_run;
    b.retention = retention;
    b.executor = strand;
    b.done = [&](std::exception_ptr e) { outcome = e; };
    writer.open(sid)->append(std::move(b));
    io.restart();
    while (!outcome && io.run_one()) {
    }
    REQUIRE(outcome);
    CHECK(!*outcome);
  }
  void run() {
    io.restart();
    io.run();
  }
  std::vector<std::int64_t> readable() {
    std::vector<std::int64_t> ids;
    for (const auto& f : reader->events_after(sid, 0, 1000)) ids.push_back(f->id);
    return ids;
  }
  std::int64_t journal_rows() {
    auto st = reader->database().prepare_uncached("SELECT COUNT(*) FROM event_journal");
    st.step();
    return st.int64(0);
  }
  std::int64_t segment_rows() { return agw::test::count_rows(*reader, "event_batches", sid); }

  temp_db db;
  journal_tails tails;
  agw::core::store_executor store{
      [this](auto) { return std::make_unique<sqlite_store>(db.path, agw::persistence::sqlite_database::options{}, &tails); },
      {.readers = 1}};
  // Before the writer: its sessions hold the strand's executor, which must not outlive io.
  net::io_context io;
  net::strand<net::io_context::executor_type> strand{net::make_strand(io)};
  sqlite_event_writer writer;
  std::unique_ptr<sqlite_store> reader =
      std::make_unique<sqlite_store>(db.path, agw::persistence::sqlite_database::options{}, &tails);
};

}  // namespace

TEST_CASE("sqlite_event_writer: small batches go to the journal and are read from the tail until they form a segment") {
  fixture fx({.segment_frames = 5, .segment_age = 0ms});
  for (std::int64_t id = 1; id <= 4; ++id) fx.append({token(id)});
  CHECK(fx.journal_rows() == 4);
  CHECK(fx.segment_rows() == 0);
  REQUIRE(fx.tails.oldest_claim());
  CHECK(*fx.tails.oldest_claim() == 1);  // the session's first journal row is still needed
  CHECK(fx.readable() == range(1, 4));   // from the tail, no segment yet
  CHECK(fx.reader->oldest_event_id(sid) == 1);

  // The fifth event fills the tail: tail and batch go into one segment 1..5, and the
  // session no longer needs any journal row (the writer's maintenance cuts them).
  fx.append({token(5)});
  CHECK(fx.segment_rows() == 1);
  CHECK_FALSE(fx.tails.oldest_claim());
  CHECK(fx.tails.size(sid) == 0);
  CHECK(fx.journal_rows() == 4);  // still there until a cut; reads no longer need them
  const auto events = fx.reader->events_after(sid, 0, 100);
  REQUIRE(events.size() == 5);
  for (std::int64_t id = 1; id <= 5; ++id) CHECK(events[static_cast<std::size_t>(id - 1)]->sse == token(id)->sse);
}

TEST_CASE("sqlite_event_writer: a tail's size threshold is drawn in [segment_frames_min, segment_frames]") {
  // Sessions paced alike must not all write their segments in one writer cycle.
  fixture fx({.segment_frames = 64, .segment_frames_min = 32, .segment_age = 0ms});
  std::int64_t id = 0;
  while (fx.segment_rows() == 0 && id < 100) fx.append({token(++id)});
  CHECK(id >= 32);
  CHECK(id <= 64);
  CHECK(fx.readable() == range(1, id));
}

TEST_CASE("sqlite_event_writer: a run's done writes the journaled tail as a segment at once, trimmed to retention") {
  fixture fx({.segment_frames = 64, .segment_age = 0ms});
  for (std::int64_t id = 1; id <= 5; ++id) fx.append({token(id)});
  CHECK(fx.segment_rows() == 0);
  fx.append({done(6)}, /*ends_run=*/true, /*retention=*/3);
  CHECK(fx.segment_rows() == 1);
  CHECK_FALSE(fx.tails.oldest_claim());
  CHECK(fx.readable() == range(4, 6));  // exactly the newest three
  CHECK(fx.reader->oldest_event_id(sid) == 4);
}

TEST_CASE("sqlite_event_writer: a journaled tail older than segment_age becomes a segment") {
  fixture fx({.segment_frames = 64, .segment_age = 30ms});
  fx.append({token(1)});
  fx.io.restart();
  fx.io.run_for(10ms);
  CHECK(fx.segment_rows() == 0);
  CHECK(fx.tails.oldest_claim());
  fx.run();  // the age timer fires, the segment commits, nothing is left to do
  CHECK(fx.segment_rows() == 1);
  CHECK_FALSE(fx.tails.oldest_claim());
  CHECK(fx.readable() == std::vector<std::int64_t>{1});
}

TEST_CASE("sqlite_event_writer: a forgotten (deleted) session keeps no tail and no claim") {
  fixture fx({.segment_frames = 64, .segment_age = 0ms});
  fx.append({token(1)});
  fx.append({token(2)});
  REQUIRE(fx.tails.oldest_claim());
  fx.writer.forget(sid);
  CHECK_FALSE(fx.tails.oldest_claim());
  CHECK(fx.tails.size(sid) == 0);
}

TEST_CASE("sqlite_event_writer: a refused age segment is tried again after another age, not in a loop") {
  fixture fx({.segment_frames = 64, .segment_age = 100ms});
  fx.append({token(1)});
  // The session's rows go (a DELETE) before the hub tells the writer to forget it:
  // every segment of its tail is refused by the foreign key.
  fx.reader->delete_session(sid);
  const auto before = fx.store.batches_committed();
  fx.io.restart();
  fx.io.run_for(300ms);
  const auto attempts = fx.store.batches_committed() - before;
  MESSAGE("segment attempts in 300 ms: " << attempts);
  CHECK(attempts >= 1);
  CHECK(attempts <= 8);
  fx.writer.forget(sid);
  CHECK_FALSE(fx.tails.oldest_claim());
}

TEST_CASE("sqlite_event_writer: retire keeps a session whose events are journal-only and lets it go once they are a segment") {
  // An idle channel's eviction (session_hub::evict_idle) asks retire: a new channel reads
  // the session's last id from its newest segment, which journal-only events are not in.
  fixture fx({.segment_frames = 64, .segment_age = 0ms});
  const auto first = fx.writer.open(sid);
  fx.append({token(1)});
  fx.append({token(2)});
  CHECK(fx.reader->find_session(sid)->last_event_id == 0);  // the tail is not what a read sees
  CHECK_FALSE(fx.writer.retire(sid));
  CHECK(fx.writer.open(sid) == first);  // kept as it was
  CHECK(fx.tails.size(sid) == 2);

  fx.append({done(3)}, /*ends_run=*/true);
  CHECK(fx.reader->find_session(sid)->last_event_id == 3);
  CHECK(fx.writer.retire(sid));
  CHECK(fx.writer.retire(sid));  // nothing left: still true

  // The next open starts afresh and the log goes on where it was.
  const auto again = fx.writer.open(sid);
  CHECK(again != first);
  fx.append({token(4)});
  CHECK(fx.readable() == range(1, 4));
}
