// persistence/sqlite_busy_wait: a connection waiting for another's write lock takes it
// once it is let go, and gives up with SQLITE_BUSY after its limit.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "persistence/sqlite_busy_wait.hpp"
#include "persistence/sqlite_database.hpp"
#include "tests/persistence/sqlite_fixture.hpp"

namespace {

using namespace std::chrono_literals;
using agw::persistence::sqlite_busy_wait;
using agw::persistence::sqlite_database;

// A raw connection to `path` with `wait` as its busy handler (closed on destruction).
struct raw_connection {
  sqlite3* db = nullptr;
  raw_connection(const std::string& path, sqlite_busy_wait& wait) {
    REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
    wait.install(db);
  }
  ~raw_connection() { sqlite3_close_v2(db); }
  int exec(const char* sql) { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr); }
};

}  // namespace

TEST_CASE("sqlite_busy_wait: steps of 50 µs, then 250 µs, then a millisecond") {
  CHECK(sqlite_busy_wait::step_after(0us) == 50us);
  CHECK(sqlite_busy_wait::step_after(1999us) == 50us);
  CHECK(sqlite_busy_wait::step_after(2ms) == 250us);
  CHECK(sqlite_busy_wait::step_after(49ms) == 250us);
  CHECK(sqlite_busy_wait::step_after(50ms) == 1000us);
  CHECK(sqlite_busy_wait::step_after(10s) == 1000us);
}

TEST_CASE("sqlite_busy_wait: a writer waits for the lock another connection holds, then takes it") {
  agw::test::temp_db file;
  sqlite_database holder(file.path);  // WAL mode, its own 5 s wait
  holder.exec("CREATE TABLE t (v INTEGER)");
  holder.exec("BEGIN IMMEDIATE");
  holder.exec("INSERT INTO t VALUES (1)");

  sqlite_busy_wait wait(5000ms);
  raw_connection waiter(file.path, wait);
  std::atomic<bool> released{false};
  std::thread letting_go([&] {
    std::this_thread::sleep_for(30ms);
    released = true;
    holder.exec("COMMIT");
  });
  // Blocks in the busy handler until the holder commits, then writes after it.
  const int rc = waiter.exec("BEGIN IMMEDIATE; INSERT INTO t VALUES (2); COMMIT");
  const bool after_release = released.load();
  letting_go.join();
  CHECK(rc == SQLITE_OK);
  CHECK(after_release);
  auto rows = holder.prepare("SELECT count(*) FROM t");
  REQUIRE(rows.step());
  CHECK(rows.int64(0) == 2);
}

TEST_CASE("sqlite_busy_wait: a lock held past the limit is SQLITE_BUSY, and the next wait starts its own limit") {
  agw::test::temp_db file;
  sqlite_database holder(file.path);
  holder.exec("CREATE TABLE t (v INTEGER)");
  holder.exec("BEGIN IMMEDIATE");

  sqlite_busy_wait wait(200ms);
  raw_connection waiter(file.path, wait);
  const auto started = std::chrono::steady_clock::now();
  CHECK(waiter.exec("BEGIN IMMEDIATE") == SQLITE_BUSY);
  // It waited out its limit (no upper bound checked: this machine may pause the thread).
  CHECK(std::chrono::steady_clock::now() - started >= 200ms);

  // A second wait is timed from its own first call, not from the first wait's.
  std::thread letting_go([&] {
    std::this_thread::sleep_for(20ms);
    holder.exec("COMMIT");
  });
  CHECK(waiter.exec("BEGIN IMMEDIATE; INSERT INTO t VALUES (1); COMMIT") == SQLITE_OK);
  letting_go.join();
}

TEST_CASE("sqlite_busy_wait: a call long after the one before starts a new wait, even when SQLite did not reset its count") {
  sqlite_busy_wait wait(30ms);
  // One wait, called until it gives up: at least its limit.
  const auto started = std::chrono::steady_clock::now();
  int tries = 0;
  while (sqlite_busy_wait::on_busy(&wait, tries) != 0) ++tries;
  CHECK(std::chrono::steady_clock::now() - started >= 30ms);
  CHECK(tries > 0);
  // A later wait in the same statement: SQLite's count goes on from where it was.
  std::this_thread::sleep_for(sqlite_busy_wait::new_wait_gap + 5ms);
  CHECK(sqlite_busy_wait::on_busy(&wait, tries + 1) == 1);
}
