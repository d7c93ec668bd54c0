// Webhook claims and the sweep lock on PostgreSQL, with nodes racing for real: two
// connections (two nodes) claiming from one outbox at once each get a disjoint
// share, every due delivery exactly once (FOR UPDATE SKIP LOCKED); of two
// transactions asking for one sweep's lock at once, one gets it.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/postgres/pg_test_db.hpp"
#include "tests/support/store_rows.hpp"

using namespace agw::test;
namespace pg = agw::persistence::pg;

namespace {

constexpr int deliveries = 200;

// Each node claims (a batch transaction each, as the store executor runs a write job)
// until every delivery was handed out or `bound` rounds went by. Returns what each
// node got, in claim order.
std::vector<std::vector<std::string>> claim_concurrently(std::vector<std::unique_ptr<pg::pg_store>>& nodes, std::int64_t now_ms,
                                                         std::int64_t until_ms) {
  std::vector<std::vector<std::string>> got(nodes.size());
  std::atomic<int> claimed{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (std::size_t n = 0; n < nodes.size(); ++n)
    threads.emplace_back([&, n] {
      ready++;
      while (ready.load() < static_cast<int>(nodes.size())) std::this_thread::yield();  // start together
      for (int round = 0; round < 5000 && claimed.load() < deliveries; ++round) {
        nodes[n]->begin_batch();
        auto batch = nodes[n]->claim_due_webhook_deliveries(now_ms, until_ms, 7);
        nodes[n]->commit_batch();
        for (const auto& d : batch) got[n].push_back(d.id);
        claimed += static_cast<int>(batch.size());
      }
    });
  for (auto& t : threads) t.join();
  return got;
}

void check_each_once(const std::vector<std::vector<std::string>>& got) {
  std::map<std::string, int> times;
  for (const auto& node : got)
    for (const auto& id : node) times[id]++;
  CHECK(times.size() == static_cast<std::size_t>(deliveries));
  int repeated = 0;
  for (const auto& [id, n] : times) repeated += n > 1 ? 1 : 0;
  CHECK(repeated == 0);
  for (std::size_t n = 0; n < got.size(); ++n) MESSAGE("node " << n << " claimed " << got[n].size());
}

}  // namespace

TEST_CASE("webhook claims: two nodes claiming at once get every due delivery exactly once, again after retries") {
  pg_test_db db;
  {
    auto setup = db.open();
    for (int s = 0; s < 20; ++s) setup->insert_session(make_session("s" + std::to_string(s), s));
    for (int i = 0; i < deliveries; ++i) {
      const auto id = "d" + std::to_string(i);
      // Due at scattered times up to 999, so the two nodes walk the same order.
      setup->insert_webhook_delivery(make_delivery(id, "s" + std::to_string(i % 20), (i * 37) % 1000));
    }
  }
  std::vector<std::unique_ptr<pg::pg_store>> nodes;
  nodes.push_back(db.open());
  nodes.push_back(db.open());

  const auto first = claim_concurrently(nodes, 1000, 60'000);
  check_each_once(first);
  // Every delivery is claimed: nothing more for either node, and nothing falls due before the claims end.
  CHECK(nodes[0]->claim_due_webhook_deliveries(1000, 60'000, 500).empty());
  CHECK(nodes[1]->next_webhook_due_ms(1000) == 60'000);

  // Each node records a failed attempt for what it claimed (retry at 2000), which releases
  // the claims; the second round hands every delivery out exactly once again.
  for (std::size_t n = 0; n < nodes.size(); ++n)
    for (const auto& id : first[n]) REQUIRE(nodes[n]->record_webhook_attempt(make_outcome(id, 1500, 500, "pending", 2000)));
  const auto second = claim_concurrently(nodes, 2000, 70'000);
  check_each_once(second);
  // Each delivery has exactly the one attempt recorded, numbered 1.
  for (int s = 0; s < 20; ++s)
    for (const auto& d : nodes[0]->list_webhook_deliveries("s" + std::to_string(s))) {
      CAPTURE(d.id);
      REQUIRE(d.attempts.size() == 1);
      CHECK(d.attempts[0].attempt == 1);
    }
}

TEST_CASE("sweep lock: of two transactions asking at once, one leads; the lock goes with its commit") {
  pg_test_db db;
  auto a = db.open();
  auto b = db.open();
  a->begin_batch();
  b->begin_batch();
  CHECK(a->try_lead("session-ttl-sweep"));
  CHECK_FALSE(b->try_lead("session-ttl-sweep"));
  CHECK(b->try_lead("another-task"));       // one lock per task
  CHECK(a->try_lead("session-ttl-sweep"));  // the holder asking again
  CHECK_FALSE(a->try_lead("another-task"));
  a->commit_batch();
  CHECK(b->try_lead("session-ttl-sweep"));  // free once a committed
  b->rollback_batch();
  a->begin_batch();
  CHECK(a->try_lead("another-task"));  // and once b rolled back
  a->commit_batch();

  // Racing for real: in each round both ask at once, and the leader holds the lock until
  // the other has asked too. Exactly one leads every round.
  constexpr int rounds = 50;
  std::vector<std::atomic<int>> leaders(rounds);
  std::atomic<int> asked{0};
  std::atomic<int> at_start{0};
  auto node = [&](pg::pg_store& s) {
    for (int r = 0; r < rounds; ++r) {
      s.begin_batch();
      at_start++;
      while (at_start.load() < 2 * (r + 1)) std::this_thread::yield();
      const bool led = s.try_lead("session-ttl-sweep");
      if (led) leaders[r]++;
      asked++;
      while (asked.load() < 2 * (r + 1)) std::this_thread::yield();
      s.commit_batch();
    }
  };
  std::thread ta([&] { node(*a); });
  std::thread tb([&] { node(*b); });
  ta.join();
  tb.join();
  for (int r = 0; r < rounds; ++r) {
    CAPTURE(r);
    CHECK(leaders[r].load() == 1);
  }
}
