// The event writer's fence on PostgreSQL (pg_event_writer with
// event_log_writer::batch::fence): a run's batches go in only while its token holds
// the session's lease; one fenced out in a writer cycle does not hold back the others.
// And the lease row's abort request (migration 5), read back by the owner's renewal.
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <future>

#include "core/storage/store_error.hpp"
#include "persistence/postgres/pg_backend.hpp"
#include "persistence/postgres/pg_run_leases.hpp"
#include "tests/postgres/pg_test_db.hpp"
#include "tests/support/store_rows.hpp"

using namespace agw::test;
namespace pg = agw::persistence::pg;

namespace {

auto frames(std::int64_t first, std::int64_t last) { return make_token_frames(first, last); }

}  // namespace

TEST_CASE("fenced writer: a batch whose token lost the lease is fenced_out; the cycle's other batches commit") {
  pg_test_db db;
  auto setup = db.open();
  setup->insert_session(make_session("held", 1));
  setup->insert_session(make_session("taken", 2));
  setup->insert_session(make_session("free", 3));
  const auto held = pg::acquire_run_lease(setup->db(), "held", "run-h", "node-a", 0, 4'000'000'000'000);
  const auto old = pg::acquire_run_lease(setup->db(), "taken", "run-t", "node-a", 0, 10);
  REQUIRE(held);
  REQUIRE(old);
  REQUIRE(pg::acquire_run_lease(setup->db(), "taken", "run-u", "node-b", 20, 4'000'000'000'000));  // lapsed: B took it

  pg::pg_backend backend(db.url());
  boost::asio::io_context io;
  std::map<std::string, std::exception_ptr> outcome;
  int done = 0;
  auto append = [&](const std::string& session, std::int64_t fence) {
    agw::core::event_log_writer::batch b;
    b.events = frames(1, 3);
    b.executor = io.get_executor();
    b.fence = fence;
    b.done = [&, session](std::exception_ptr e) {
      outcome[session] = e;
      ++done;
    };
    backend.backend().events.open(session, "")->append(std::move(b));
  };
  append("held", held->token);
  append("taken", old->token);
  append("free", 0);
  while (done < 3) REQUIRE(io.run_one_for(std::chrono::seconds(10)) > 0);
  CHECK_FALSE(outcome["held"]);
  CHECK_FALSE(outcome["free"]);
  REQUIRE(outcome["taken"]);
  CHECK_THROWS_AS(std::rethrow_exception(outcome["taken"]), agw::core::fenced_out);
  backend.stop();
  CHECK(setup->events_after("held", 0, 10).size() == 3);
  CHECK(setup->events_after("free", 0, 10).size() == 3);
  CHECK(setup->events_after("taken", 0, 10).empty());
}

TEST_CASE("run_leases: an abort request reaches the owner's renewal; a node takes its own lease again") {
  pg_test_db db;
  auto a = db.open();
  auto b = db.open();
  a->insert_session(make_session("s", 1));
  const auto lease = a->acquire_run_lease("s", "run-1", "node-a", 0, 10'000);
  REQUIRE(lease);
  CHECK_FALSE(b->request_run_abort("s", "run-other"));
  CHECK(b->request_run_abort("s", "run-1"));
  auto renewal = a->renew_run_lease("s", lease->token, 20'000);
  CHECK(renewal.held);
  CHECK(renewal.abort_requested);
  // The node's next run (its reservation decided) takes the lease at once, abort cleared.
  const auto next = a->acquire_run_lease("s", "run-2", "node-a", 1000, 30'000);
  REQUIRE(next);
  CHECK(next->token == lease->token + 1);
  CHECK_FALSE(next->abort_requested);
  CHECK_FALSE(b->acquire_run_lease("s", "run-3", "node-b", 1000, 30'000));
  CHECK_FALSE(a->renew_run_lease("s", lease->token, 40'000).held);  // the old token is fenced
  const auto lapsed = b->lapsed_run_leases(31'000, 10);
  REQUIRE(lapsed.size() == 1);
  CHECK(lapsed[0].run_id == "run-2");
}
