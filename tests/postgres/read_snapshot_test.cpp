// pg_store::read_snapshot: a listing's statements read one commit on PostgreSQL, as
// sqlite_store's do (tests/persistence/sqlite_store_test.cpp): two connections (a
// reader and another node's writer) on one database, the writer committing between
// the reader's statements.
#include <doctest/doctest.h>

#include "tests/postgres/pg_test_db.hpp"
#include "tests/support/store_rows.hpp"

using namespace agw::test;
namespace pg = agw::persistence::pg;

TEST_CASE("pg_store: a read_snapshot's statements see one commit, whatever commits meanwhile") {
  pg_test_db db;
  auto reader = db.open();
  auto writer = db.open();
  auto s = make_session("s1", 1);
  s.title = "before";
  writer->insert_session(s);
  {
    const pg::pg_store::read_snapshot snapshot(*reader);
    CHECK(reader->find_session("s1")->title == "before");
    s.title = "after";
    writer->begin_batch();
    CHECK(writer->update_session(s));
    writer->commit_batch();
    // READ COMMITTED would see "after" here.
    CHECK(reader->find_session("s1")->title == "before");
    CHECK(reader->list_sessions({}).sessions.at(0).title == "before");
  }
  CHECK_FALSE(reader->batch_open());
  CHECK(reader->find_session("s1")->title == "after");
}

TEST_CASE("pg_store: a read_snapshot inside a batch leaves the batch alone; one whose statement failed still ends") {
  pg_test_db db;
  auto store = db.open();
  store->insert_session(make_session("s1", 1));

  // Inside a batch it opens nothing and ends nothing: the write job's transaction stays.
  store->begin_batch();
  { const pg::pg_store::read_snapshot inside(*store); }
  CHECK(store->batch_open());
  store->rollback_batch();

  // A statement that fails aborts the snapshot's transaction; ending the snapshot still
  // gives the connection back idle, and the next job reads normally.
  {
    const pg::pg_store::read_snapshot snapshot(*store);
    CHECK_THROWS(store->db().run_once("SELECT no_such_column FROM sessions"));
    CHECK(store->batch_open());  // aborted, still open until the snapshot ends
  }
  CHECK_FALSE(store->batch_open());
  CHECK(store->find_session("s1"));

  // Listings use it: they leave no transaction open behind them.
  CHECK(store->list_sessions({}).total == 1);
  CHECK(store->list_webhook_deliveries("s1").empty());
  CHECK_FALSE(store->batch_open());
}
