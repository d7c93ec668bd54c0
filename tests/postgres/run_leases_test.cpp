// Run leases and fencing on PostgreSQL (persistence/postgres/pg_run_leases.hpp):
// one run per session across nodes, takeover only after the lease lapsed, and a
// node whose lease was taken commits no further event.
#include <doctest/doctest.h>

#include <thread>

#include "persistence/postgres/pg_run_leases.hpp"
#include "tests/postgres/pg_test_db.hpp"
#include "tests/support/store_rows.hpp"

using namespace agw::test;
namespace pg = agw::persistence::pg;

namespace {

std::int64_t held_events(pg::pg_store& store, const std::string& session) {
  const auto events = store.events_after(session, 0, 1000);
  return events.empty() ? 0 : events.back()->id;
}

}  // namespace

TEST_CASE("run_leases: one run holds a session; another is refused until release or lapse") {
  pg_test_db db;
  auto a = db.open();  // node A's connection
  auto b = db.open();  // node B's
  a->insert_session(make_session("s", 1));
  const auto first = pg::acquire_run_lease(a->db(), "s", "run-1", "node-a", 1000, 6000);
  REQUIRE(first);
  CHECK(first->token == 1);
  CHECK(first->node_id == "node-a");
  // B, before the lease lapses: refused (the 409), A's lease untouched.
  CHECK_FALSE(pg::acquire_run_lease(b->db(), "s", "run-2", "node-b", 2000, 7000));
  CHECK(pg::find_run_lease(b->db(), "s")->run_id == "run-1");
  // A renews; B at the old expiry is still refused.
  CHECK(pg::renew_run_lease(a->db(), "s", 1, 9000));
  CHECK_FALSE(pg::acquire_run_lease(b->db(), "s", "run-2", "node-b", 6000, 11000));
  CHECK(pg::lapsed_run_leases(b->db(), 8999, 10).empty());
  // A stops renewing: at the expiry the lease is lapsed, and B takes it with a larger token.
  const auto lapsed = pg::lapsed_run_leases(b->db(), 9000, 10);
  REQUIRE(lapsed.size() == 1);
  CHECK(lapsed[0].session_id == "s");
  const auto taken = pg::acquire_run_lease(b->db(), "s", "run-2", "node-b", 9000, 14000);
  REQUIRE(taken);
  CHECK(taken->token == 2);
  // A's token no longer renews nor releases.
  CHECK_FALSE(pg::renew_run_lease(a->db(), "s", 1, 20000));
  CHECK_FALSE(pg::release_run_lease(a->db(), "s", 1));
  // B's run ends: free, and the next run's token is larger still.
  CHECK(pg::release_run_lease(b->db(), "s", 2));
  CHECK_FALSE(pg::find_run_lease(a->db(), "s"));
  const auto next = pg::acquire_run_lease(a->db(), "s", "run-3", "node-a", 9500, 15000);
  REQUIRE(next);
  CHECK(next->token == 3);
}

TEST_CASE("run_leases: a fenced-out node commits no further event; the new owner goes on gap-free") {
  pg_test_db db;
  auto a = db.open();
  auto b = db.open();
  a->insert_session(make_session("s", 1));
  const auto lease_a = pg::acquire_run_lease(a->db(), "s", "run-1", "node-a", 0, 100);
  REQUIRE(lease_a);
  CHECK(pg::append_events_fenced(a->db(), make_batch("s", 1, 3), lease_a->token));
  CHECK(pg::append_events_fenced(a->db(), make_batch("s", 1, 3), lease_a->token));  // a retry: still A's
  // A stalls past its lease; B takes over from the log's last id.
  const auto lease_b = pg::acquire_run_lease(b->db(), "s", "run-2", "node-b", 100, 200);
  REQUIRE(lease_b);
  const auto from = held_events(*b, "s");
  CHECK(from == 3);
  // A wakes up and tries to commit what it had: refused, nothing written.
  CHECK_FALSE(pg::append_events_fenced(a->db(), make_batch("s", 4, 6), lease_a->token));
  CHECK(held_events(*a, "s") == 3);
  CHECK(pg::append_events_fenced(b->db(), make_batch("s", from + 1, from + 2), lease_b->token));
  const auto events = b->events_after("s", 0, 100);
  REQUIRE(events.size() == 5);
  for (std::size_t i = 0; i < events.size(); ++i) CHECK(events[i]->id == static_cast<std::int64_t>(i + 1));
  // No lease at all: fenced too.
  CHECK(pg::release_run_lease(b->db(), "s", lease_b->token));
  CHECK_FALSE(pg::append_events_fenced(b->db(), make_batch("s", 6, 6), lease_b->token));
}

TEST_CASE("run_leases: nodes racing for one session: exactly one wins") {
  pg_test_db db;
  {
    auto setup = db.open();
    for (int s = 0; s < 20; ++s) setup->insert_session(make_session("s" + std::to_string(s), s));
  }
  constexpr int nodes = 4;
  std::vector<std::unique_ptr<pg::pg_store>> connections;
  for (int n = 0; n < nodes; ++n) connections.push_back(db.open());
  std::vector<std::vector<int>> won(nodes);
  std::vector<std::thread> threads;
  for (int n = 0; n < nodes; ++n)
    threads.emplace_back([&, n] {
      for (int s = 0; s < 20; ++s)
        if (pg::acquire_run_lease(connections[n]->db(), "s" + std::to_string(s), "run-" + std::to_string(n),
                                  "node-" + std::to_string(n), 0, 1000))
          won[n].push_back(s);
    });
  for (auto& t : threads) t.join();
  std::vector<int> winners(20, 0);
  for (const auto& w : won)
    for (int s : w) winners[s]++;
  for (int s = 0; s < 20; ++s) {
    CAPTURE(s);
    CHECK(winners[s] == 1);
  }
}

TEST_CASE("run_leases: a session's delete takes its lease") {
  pg_test_db db;
  auto a = db.open();
  a->insert_session(make_session("s", 1));
  REQUIRE(pg::acquire_run_lease(a->db(), "s", "run-1", "node-a", 0, 100));
  CHECK(a->delete_session("s"));
  CHECK_FALSE(pg::find_run_lease(a->db(), "s"));
  CHECK(pg::lapsed_run_leases(a->db(), 1000, 10).empty());
}
