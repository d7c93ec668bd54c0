// SQLite's layout of the live event log (sqlite_event_writer): small batches go to
// the journal files (written by their io thread's flush, or from any other thread by the
// journal thread) and are read from the in-memory tail; the tail becomes a segment
// in the background (by size or age) while later batches go on to the journal; a run's
// end and a big batch are segments at once; the journal's files go once no tail needs
// them.
#include "persistence/sqlite_event_writer.hpp"

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "persistence/journal_codec.hpp"
#include "tests/persistence/sqlite_fixture.hpp"

namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using agw::core::frame_ptr;
using agw::persistence::journal_file;
using agw::persistence::journal_tails;
using agw::persistence::sqlite_event_writer;
using agw::persistence::sqlite_store;
using agw::test::temp_db;

const std::string sid = "s1";
const std::string thread = "thread-s1";  // make_session's thread id: the session's incarnation

frame_ptr token(std::int64_t id) {
  return std::make_shared<const agw::core::event_frame>(
      agw::core::make_event_frame(id, agw::core::event_type::token, "run-1", "content", "t" + std::to_string(id)));
}
frame_ptr done(std::int64_t id) {
  return std::make_shared<const agw::core::event_frame>(
      agw::core::make_event_frame(id, agw::core::event_type::done, "run-1", {{"assistant_data", boost::json::object{}}}));
}
std::vector<frame_ptr> tokens(std::int64_t first, std::int64_t last) {
  std::vector<frame_ptr> out;
  for (auto id = first; id <= last; ++id) out.push_back(token(id));
  return out;
}

std::vector<std::int64_t> range(std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = first; i <= last; ++i) out.push_back(i);
  return out;
}

// Holds the store's writer in a job until released: what the writer does meanwhile waits.
struct writer_gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool entered = false, open = false;
  std::function<void(agw::core::store_connection&)> job() {
    return [this](agw::core::store_connection&) {
      std::unique_lock lock(mutex);
      entered = true;
      cv.notify_all();
      cv.wait(lock, [&] { return open; });
    };
  }
  void wait_entered() {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return entered; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    cv.notify_all();
  }
};

struct fixture {
  explicit fixture(sqlite_event_writer::options opts, journal_file::options files = {})
      : journal(db.journal_dir(), files), writer(store, tails, journal, with_fast_release(opts)) {
    auto c = db.open();
    c->insert_session(agw::test::make_session(sid, 1000));
  }
  ~fixture() {
    writer.stop();
    store.stop();
  }
  static sqlite_event_writer::options with_fast_release(sqlite_event_writer::options o) {
    o.journal_release_interval = 0ms;
    return o;
  }

  // Appends `events` as one batch; `outcome` is set on the strand when the writer is done with it.
  // Through `log` when given (a channel keeps the log it opened), else the session's current one.
  void start(std::vector<frame_ptr> events, std::optional<std::exception_ptr>& outcome, bool ends_run = false,
             std::size_t retention = 0, std::shared_ptr<sqlite_event_writer::session_log> log = nullptr) {
    sqlite_event_writer::batch b;
    b.events = std::move(events);
    b.ends_run = ends_run;
    b.retention = retention;
    b.executor = strand;
    b.done = [&outcome](std::exception_ptr e) { outcome = e; };
    if (!log) log = writer.open(sid, thread);
    if (!on_io_thread) {
      log->append(std::move(b));
      return;
    }
    // As a channel appends: in a handler on its strand, so the batch goes to the thread's lane.
    net::post(strand, [log, b = std::move(b)]() mutable { log->append(std::move(b)); });
  }
  // Appends and runs until the writer says it is durable.
  void append(std::vector<frame_ptr> events, bool ends_run = false, std::size_t retention = 0) {
    std::optional<std::exception_ptr> outcome;
    start(std::move(events), outcome, ends_run, retention);
    run_until([&] { return outcome.has_value(); });
    REQUIRE(outcome);
    CHECK(!*outcome);
  }
  // Runs the strand's handlers (completions, timers) until `done` or 5 s.
  void run_until(const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + 5s;
    while (!done() && std::chrono::steady_clock::now() < until) {
      io.restart();
      io.run_for(2ms);
    }
  }
  std::vector<std::int64_t> readable() {
    std::vector<std::int64_t> ids;
    for (const auto& f : reader->events_after(sid, 0, 1000)) ids.push_back(f->id);
    return ids;
  }
  // The journal's records as the start-up fold would read them: (first id, last id) per entry.
  std::vector<std::pair<std::int64_t, std::int64_t>> journaled() {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    journal_file::read(db.journal_dir(), [&](std::uint64_t, std::string_view payload) {
      for (const auto& e : agw::persistence::decode_journal_entries(payload)) out.emplace_back(e.batch.first_id, e.batch.last_id);
    });
    return out;
  }
  std::int64_t segment_rows() { return agw::test::count_rows(*reader, "event_batches", sid); }
  // The journal's files on disk (read from the directory: the journal thread owns the object).
  std::size_t journal_files() {
    std::size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(db.journal_dir())) n += e.path().extension() == ".evj";
    return n;
  }

  // Appends from a handler on the strand (an io thread's lane) instead of this thread
  // (the journal thread's way).
  bool on_io_thread = false;
  temp_db db;
  journal_tails tails;
  agw::core::store_executor store{
      [this](auto) { return std::make_unique<sqlite_store>(db.path, agw::persistence::sqlite_database::options{}, &tails); },
      {.readers = 1}};
  journal_file journal;
  // Before the writer: its sessions hold the strand's executor, which must not outlive io.
  net::io_context io;
  net::io_context::executor_type strand{io.get_executor()};  // its implicit strand (core/io_executor.hpp)
  sqlite_event_writer writer;
  std::unique_ptr<sqlite_store> reader =
      std::make_unique<sqlite_store>(db.path, agw::persistence::sqlite_database::options{}, &tails);
};

}  // namespace

TEST_CASE("sqlite_event_writer: small batches go to the journal and are read from the tail until they form a segment") {
  fixture fx({.segment_frames = 5, .segment_frames_min = 5, .segment_age = 0ms});
  SUBCASE("appended on the io thread") { fx.on_io_thread = true; }
  SUBCASE("appended from another thread") {}
  for (std::int64_t id = 1; id <= 4; ++id) fx.append({token(id)});
  CHECK(fx.journaled() == std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}, {2, 2}, {3, 3}, {4, 4}});
  CHECK(fx.segment_rows() == 0);
  REQUIRE(fx.tails.oldest_claim());
  CHECK(*fx.tails.oldest_claim() == 1);  // the session's first journal record is still needed
  CHECK(fx.readable() == range(1, 4));   // from the tail, no segment yet
  CHECK(fx.reader->oldest_event_id(sid) == 1);

  // The fifth event fills the tail: it is journaled like the others, and the tail 1..5
  // goes into one segment behind it; then no journal record is needed.
  fx.append({token(5)});
  fx.run_until([&] { return fx.segment_rows() == 1 && !fx.tails.oldest_claim(); });
  CHECK(fx.segment_rows() == 1);
  CHECK_FALSE(fx.tails.oldest_claim());
  CHECK(fx.tails.size(sid) == 0);
  const auto events = fx.reader->events_after(sid, 0, 100);
  REQUIRE(events.size() == 5);
  for (std::int64_t id = 1; id <= 5; ++id) CHECK(events[static_cast<std::size_t>(id - 1)]->sse == token(id)->sse);
  CHECK(fx.reader->find_session(sid)->last_event_id == 5);
}

TEST_CASE("sqlite_event_writer: a tail's size threshold is drawn in [segment_frames_min, segment_frames]") {
  // Sessions paced alike must not all write their segments in one writer cycle.
  fixture fx({.segment_frames = 64, .segment_frames_min = 32, .segment_age = 0ms});
  for (std::int64_t id = 1; id <= 64; ++id) fx.append({token(id)});
  fx.run_until([&] { return fx.segment_rows() > 0; });
  auto first = fx.reader->database().prepare_uncached("SELECT first_id, last_id FROM event_batches ORDER BY first_id LIMIT 1");
  REQUIRE(first.step());
  CHECK(first.int64(0) == 1);
  CHECK(first.int64(1) >= 32);
  CHECK(first.int64(1) <= 64);
  CHECK(fx.readable() == range(1, 64));
}

TEST_CASE("sqlite_event_writer: a session's next batches are journaled while its tail's segment waits for the writer") {
  // A paced run's tokens never wait for SQLite: only the tail's segment does.
  fixture fx({.segment_frames = 3, .segment_frames_min = 3, .segment_age = 0ms});
  SUBCASE("appended on the io thread") { fx.on_io_thread = true; }
  SUBCASE("appended from another thread") {}
  writer_gate gate;
  std::optional<std::exception_ptr> gate_done;
  fx.store.async_write(gate.job(), [&](std::exception_ptr e) { gate_done = e; });
  gate.wait_entered();
  for (std::int64_t id = 1; id <= 6; ++id) fx.append({token(id)});  // each durable at once
  CHECK(fx.segment_rows() == 0);                                    // the segment of 1..3 is behind the gate
  CHECK(fx.tails.size(sid) == 6);
  CHECK(fx.readable() == range(1, 6));
  gate.release();
  // The segment holds 1..3 only; 4..6 joined the tail meanwhile and make the next one.
  fx.run_until([&] { return fx.tails.size(sid) == 0; });
  CHECK(fx.segment_rows() == 2);
  CHECK(fx.readable() == range(1, 6));
  CHECK_FALSE(fx.tails.oldest_claim());
}

TEST_CASE("sqlite_event_writer: a run's done writes the journaled tail as a segment at once, trimmed to retention") {
  fixture fx({.segment_frames = 64, .segment_age = 0ms});
  SUBCASE("appended on the io thread") { fx.on_io_thread = true; }
  SUBCASE("appended from another thread") {}
  for (std::int64_t id = 1; id <= 5; ++id) fx.append({token(id)});
  CHECK(fx.segment_rows() == 0);
  fx.append({done(6)}, /*ends_run=*/true, /*retention=*/3);
  // Durable through the segment itself: the done is not journaled.
  CHECK(fx.segment_rows() == 1);
  CHECK(fx.journaled().size() == 5);
  CHECK_FALSE(fx.tails.oldest_claim());
  CHECK(fx.readable() == range(4, 6));  // exactly the newest three
  CHECK(fx.reader->oldest_event_id(sid) == 4);
}

TEST_CASE("sqlite_event_writer: a batch as big as a segment is one at once, with the tail") {
  fixture fx({.batch_segment_frames = 4, .segment_age = 0ms});
  fx.append({token(1)});
  fx.append(tokens(2, 5));
  CHECK(fx.segment_rows() == 1);
  CHECK(fx.journaled() == std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}});
  CHECK(fx.tails.size(sid) == 0);
  CHECK(fx.readable() == range(1, 5));
}

TEST_CASE("sqlite_event_writer: a journaled tail older than segment_age becomes a segment") {
  fixture fx({.segment_frames = 64, .segment_age = 30ms});
  fx.append({token(1)});
  fx.io.restart();
  fx.io.run_for(10ms);
  CHECK(fx.segment_rows() == 0);
  CHECK(fx.tails.oldest_claim());
  fx.run_until([&] { return fx.segment_rows() == 1 && !fx.tails.oldest_claim(); });
  CHECK(fx.segment_rows() == 1);
  CHECK_FALSE(fx.tails.oldest_claim());
  CHECK(fx.readable() == std::vector<std::int64_t>{1});
}

TEST_CASE("sqlite_event_writer: the journal's files go once every tail that needed them is a segment") {
  // A file per record: each append starts a new one.
  fixture fx({.segment_frames = 3, .segment_frames_min = 3, .segment_age = 0ms}, {.file_bytes = 1});
  SUBCASE("appended on the io thread") { fx.on_io_thread = true; }
  SUBCASE("appended from another thread") {}
  for (std::int64_t id = 1; id <= 2; ++id) fx.append({token(id)});
  CHECK(fx.journal_files() == 2);  // both still needed
  fx.append({token(3)});
  fx.run_until([&] { return fx.tails.size(sid) == 0; });
  // Released by the journal thread's next cycle: the file it writes stays.
  fx.append({token(4)});
  fx.run_until([&] { return fx.journal_files() == 1; });
  CHECK(fx.journal_files() == 1);
  CHECK(fx.journaled() == std::vector<std::pair<std::int64_t, std::int64_t>>{{4, 4}});
}

TEST_CASE("sqlite_event_writer: a forgotten (deleted) session keeps no tail and no claim, and writes nothing more") {
  fixture fx({.segment_frames = 64, .segment_age = 0ms});
  SUBCASE("appended on the io thread") { fx.on_io_thread = true; }
  SUBCASE("appended from another thread") {}
  const auto log = fx.writer.open(sid, thread);  // the channel's, kept while it closes
  fx.append({token(1)});
  fx.append({token(2)});
  REQUIRE(fx.tails.oldest_claim());
  fx.writer.forget(sid);
  CHECK_FALSE(fx.tails.oldest_claim());
  CHECK(fx.tails.size(sid) == 0);
  // A batch after it is refused: nothing is written for a deleted session.
  std::optional<std::exception_ptr> outcome;
  fx.start({token(3)}, outcome, false, 0, log);
  fx.run_until([&] { return outcome.has_value(); });
  REQUIRE(outcome);
  CHECK(*outcome);
  CHECK(fx.journaled().size() == 2);
}

TEST_CASE(
    "sqlite_event_writer: journal entries name the session's incarnation; a session made again with the id gets none of the old "
    "one's") {
  fixture fx({.segment_frames = 64, .segment_age = 0ms});
  fx.append({token(1)});
  fx.append({token(2)});
  // Deleted and made again with the id (an AG-UI threadId, say) while 1..2 are journal-only.
  fx.reader->delete_session(sid);
  fx.writer.forget(sid);
  auto again = agw::test::make_session(sid, 2000);
  again.thread_id = "thread-s1-again";
  fx.reader->insert_session(again);
  std::optional<std::exception_ptr> outcome;
  fx.start({token(1)}, outcome, false, 0, fx.writer.open(sid, again.thread_id));
  fx.run_until([&] { return outcome.has_value(); });
  REQUIRE(outcome);
  CHECK(!*outcome);
  // Even a deletion the writer never heard of: another incarnation's open starts afresh.
  const auto third = fx.writer.open(sid, "thread-s1-third");
  CHECK(third != fx.writer.open(sid, again.thread_id));
  // What a start-up after a crash would make of the journal: the new session's event only.
  CHECK(fx.reader->fold_journal(fx.db.journal_dir()) == 3);
  CHECK(fx.readable() == std::vector<std::int64_t>{1});
  CHECK(fx.reader->events_after(sid, 0, 10).front()->sse == token(1)->sse);
}

TEST_CASE("sqlite_event_writer: a deleted session's segment never lands in a session made again with its id") {
  fixture fx({.segment_frames = 64, .segment_age = 0ms});
  const auto old_log = fx.writer.open(sid, thread);
  fx.append({token(1)});
  // Deleted, and made again with the id, before the writer hears of the deletion: the old
  // run's end still comes.
  fx.reader->delete_session(sid);
  auto again = agw::test::make_session(sid, 2000);
  again.thread_id = "thread-s1-again";
  fx.reader->insert_session(again);
  std::optional<std::exception_ptr> outcome;
  fx.start({done(2)}, outcome, /*ends_run=*/true, 0, old_log);
  fx.run_until([&] { return outcome.has_value(); });
  REQUIRE(outcome);
  CHECK(*outcome);  // refused: the row is another incarnation's
  CHECK(fx.segment_rows() == 0);
  CHECK(fx.reader->find_session(sid)->last_event_id == 0);
}

TEST_CASE("sqlite_event_writer: a refused tail segment is tried again after another age, not in a loop") {
  fixture fx({.segment_frames = 2, .segment_frames_min = 2, .segment_age = 100ms});
  // The session's rows go (a DELETE) before the hub tells the writer to forget it:
  // every segment of its tail is refused by the foreign key.
  fx.reader->delete_session(sid);
  const auto before = fx.store.batches_committed();
  for (std::int64_t id = 1; id <= 4; ++id) fx.append({token(id)});  // the size threshold, passed again and again
  fx.io.restart();
  fx.io.run_for(300ms);
  const auto attempts = fx.store.batches_committed() - before;
  MESSAGE("segment attempts in 300 ms: " << attempts);
  CHECK(attempts >= 1);
  CHECK(attempts <= 8);
  fx.writer.forget(sid);
  CHECK_FALSE(fx.tails.oldest_claim());
}

TEST_CASE("sqlite_event_writer: a refused tail segment holds the size threshold back only until a segment goes through") {
  // An age far beyond the test: every segment below is asked for by size or by a run's end.
  fixture fx({.segment_frames = 2, .segment_frames_min = 2, .segment_age = 30s});
  fx.reader->delete_session(sid);  // refused by the foreign key, for now
  fx.append({token(1)});
  fx.append({token(2)});  // the size threshold: a segment, refused
  fx.run_until([&] { return fx.store.batches_committed() > 0; });
  fx.append({token(3)});  // past the threshold, but held back: no segment asked for again
  fx.io.restart();
  fx.io.run_for(50ms);
  CHECK(fx.tails.size(sid) == 3);
  CHECK(fx.segment_rows() == 0);

  // The session's row is back (the same incarnation): the run's end takes the tail with it,
  // and that segment going through lifts the hold.
  fx.reader->insert_session(agw::test::make_session(sid, 1000));
  fx.append({done(4)}, /*ends_run=*/true);
  CHECK(fx.tails.size(sid) == 0);
  CHECK(fx.readable() == range(1, 4));

  // So the next tail is a segment at its size again, not at its age (30 s away).
  fx.append({token(5)});
  fx.append({token(6)});
  fx.run_until([&] { return fx.tails.size(sid) == 0; });
  CHECK(fx.tails.size(sid) == 0);
  CHECK(fx.segment_rows() == 2);
  CHECK(fx.readable() == range(1, 6));
}

TEST_CASE("sqlite_event_writer: retire keeps a session whose events are journal-only, hurries their segment, then lets it go") {
  // An idle channel's eviction (session_hub::evict_idle) asks retire: a new channel reads
  // the session's last id from its newest segment, which journal-only events are not in.
  fixture fx({.segment_frames = 64, .segment_age = 0ms});
  const auto first = fx.writer.open(sid, thread);
  fx.append({token(1)});
  fx.append({token(2)});
  CHECK(fx.reader->find_session(sid)->last_event_id == 0);  // the tail is not what a read sees
  CHECK_FALSE(fx.writer.retire(sid));
  CHECK(fx.writer.open(sid, thread) == first);  // kept as it was
  // Asked, the writer segments the tail now rather than at its age (none here).
  fx.run_until([&] { return fx.tails.size(sid) == 0; });
  CHECK(fx.reader->find_session(sid)->last_event_id == 2);
  CHECK(fx.writer.retire(sid));
  CHECK(fx.writer.retire(sid));  // nothing left: still true

  // The next open starts afresh and the log goes on where it was.
  const auto again = fx.writer.open(sid, thread);
  CHECK(again != first);
  fx.append({token(3)});
  fx.append({done(4)}, /*ends_run=*/true);
  CHECK(fx.readable() == range(1, 4));
}

TEST_CASE(
    "sqlite_event_writer: a stopped writer writes what was pending, makes every tail a segment, and refuses what comes after") {
  fixture fx({.segment_frames = 64, .segment_age = 0ms});
  fx.append({token(1)});
  std::optional<std::exception_ptr> pending, late;
  fx.start({token(2)}, pending);
  fx.writer.stop();
  fx.start({token(3)}, late);
  fx.run_until([&] { return pending.has_value() && late.has_value() && fx.tails.size(sid) == 0; });
  REQUIRE(pending);
  CHECK(!*pending);
  REQUIRE(late);
  CHECK(*late);
  CHECK(fx.journaled() == std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}, {2, 2}});
  // The database holds everything without the journal: a start-up folds nothing new.
  CHECK(fx.segment_rows() == 1);
  CHECK(fx.readable() == range(1, 2));
  CHECK(fx.reader->find_session(sid)->last_event_id == 2);
}

TEST_CASE("sqlite_event_writer: a tail at its bound sends batches the segment way, so a held-up store holds the run back") {
  fixture fx({.segment_frames = 2, .segment_frames_min = 2, .segment_age = 0ms});
  writer_gate gate;
  fx.store.async_write(gate.job(), [](std::exception_ptr) {});
  gate.wait_entered();
  for (std::int64_t id = 1; id <= 4; ++id) fx.append({token(id)});  // journaled up to 2 × segment_frames
  CHECK(fx.tails.size(sid) == 4);
  std::optional<std::exception_ptr> outcome;
  fx.start({token(5)}, outcome);
  fx.io.restart();
  fx.io.run_for(100ms);
  CHECK_FALSE(outcome.has_value());  // waits for the store, as before the journal
  gate.release();
  fx.run_until([&] { return outcome.has_value() && fx.tails.size(sid) == 0; });
  REQUIRE(outcome);
  CHECK(!*outcome);
  CHECK(fx.readable() == range(1, 5));
  CHECK(fx.journaled().size() == 4);  // 5 went straight to a segment
}

TEST_CASE("sqlite_event_writer: an io thread's batches of one pass are one journal record, written by that thread") {
  fixture fx({.segment_frames = 64, .segment_age = 0ms});
  const std::vector<std::string> ids = {sid, "s2", "s3"};
  for (std::size_t i = 1; i < ids.size(); ++i) fx.reader->insert_session(agw::test::make_session(ids[i], 1000));
  std::vector<std::shared_ptr<sqlite_event_writer::session_log>> logs;
  for (const auto& id : ids) logs.push_back(fx.writer.open(id, id == sid ? thread : "thread-" + id));
  int durable = 0;
  std::vector<bool> on_strand;
  // One handler appends a batch to each session, as a timer pass of the thread's runs does.
  net::post(fx.strand, [&] {
    for (std::size_t i = 0; i < logs.size(); ++i) {
      sqlite_event_writer::batch b;
      b.events = {token(1)};
      b.executor = fx.strand;
      b.done = [&](std::exception_ptr e) {
        CHECK(!e);
        ++durable;
        on_strand.push_back(fx.strand.running_in_this_thread());
      };
      logs[i]->append(std::move(b));
    }
    CHECK(durable == 0);  // the lane is written once the handlers of the moment ran
  });
  CHECK(fx.io.poll_one() == 1);  // the appends; their flush is posted behind them
  // Only that flush writes them: nothing else (the journal's thread) does meanwhile.
  std::this_thread::sleep_for(30ms);
  CHECK(fx.journaled().empty());
  CHECK(durable == 0);
  // The flush: one write, and each outcome in place, with no handler after it.
  CHECK(fx.io.poll_one() == 1);
  CHECK(durable == 3);
  CHECK(on_strand == std::vector<bool>{true, true, true});
  std::vector<std::uint64_t> seqs;
  std::size_t entries = 0;
  journal_file::read(fx.db.journal_dir(), [&](std::uint64_t seq, std::string_view payload) {
    seqs.push_back(seq);
    entries += agw::persistence::decode_journal_entries(payload).size();
  });
  CHECK(seqs.size() == 1);  // one write(2) for the three
  CHECK(entries == 3);
  for (const auto& id : ids) CHECK(fx.tails.size(id) == 1);
}

TEST_CASE("sqlite_event_writer: stop() writes what a lane holds whose flush has not run") {
  fixture fx({.segment_frames = 64, .segment_age = 0ms});
  fx.on_io_thread = true;
  std::optional<std::exception_ptr> outcome;
  fx.start({token(1)}, outcome);
  CHECK(fx.io.poll_one() == 1);  // the append: its flush is posted behind it
  CHECK(fx.journaled().empty());
  fx.writer.stop();
  CHECK(fx.journaled() == std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}});
  fx.run_until([&] { return outcome.has_value(); });  // the outcome, and the flush that finds nothing
  REQUIRE(outcome);
  CHECK(!*outcome);
  fx.io.restart();
  fx.io.poll();
  CHECK(fx.journaled() == std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}});  // written once
  // The clean stop queued the tail as a segment: the store's writer commits it as it stops.
  fx.store.stop();
  CHECK(fx.segment_rows() == 1);
  CHECK(fx.readable() == std::vector<std::int64_t>{1});
}

TEST_CASE("sqlite_event_writer: an io thread's flushes are lane_spacing apart, so a fast run's batches grow") {
  fixture fx({.segment_frames = 64, .segment_age = 0ms, .lane_spacing = 200ms});
  fx.on_io_thread = true;
  fx.append({token(1)});  // the lane's first flush: at once
  const auto first = std::chrono::steady_clock::now();
  std::optional<std::exception_ptr> second, third;
  fx.start({token(2)}, second);
  fx.io.restart();
  fx.io.run_for(50ms);
  CHECK_FALSE(second.has_value());  // waits for the rest of the spacing
  CHECK(fx.journaled() == std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}});
  fx.run_until([&] { return second.has_value(); });
  REQUIRE(second);
  CHECK(!*second);
  CHECK(std::chrono::steady_clock::now() - first >= 150ms);  // less what the first flush took to return
  CHECK(fx.journaled() == std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}, {2, 2}});
}
