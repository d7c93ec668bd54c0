// The per-client token bucket (gateway/rate_limiter): the burst, the refill rate,
// Retry-After's seconds, clients kept apart, and the bounded table's LRU eviction.
#include "gateway/rate_limiter.hpp"

#include <doctest/doctest.h>

using agw::gateway::rate_limiter;
using namespace std::chrono_literals;

TEST_CASE("rate_limiter: a burst, then one request per 1/rate seconds; Retry-After rounds up") {
  rate_limiter limiter(2.0, 3.0);
  const auto t0 = std::chrono::steady_clock::time_point{} + 100s;
  CHECK(limiter.admit("a", t0) == 0);
  CHECK(limiter.admit("a", t0) == 0);
  CHECK(limiter.admit("a", t0) == 0);
  CHECK(limiter.admit("a", t0) == 1);          // empty: one token is 0.5 s away
  CHECK(limiter.admit("a", t0 + 400ms) == 1);  // 0.8 of a token
  CHECK(limiter.admit("a", t0 + 500ms) == 0);  // a whole one
  CHECK(limiter.admit("a", t0 + 500ms) == 1);
  CHECK(limiter.admit("a", t0 + 100s) == 0);  // refills to the burst, not beyond
  CHECK(limiter.admit("a", t0 + 100s) == 0);
  CHECK(limiter.admit("a", t0 + 100s) == 0);
  CHECK(limiter.admit("a", t0 + 100s) == 1);
}

TEST_CASE("rate_limiter: a slow rate's Retry-After is the seconds to the next token") {
  rate_limiter limiter(0.1, 1.0);
  const auto t0 = std::chrono::steady_clock::time_point{} + 100s;
  CHECK(limiter.admit("a", t0) == 0);
  CHECK(limiter.admit("a", t0) == 10);
  CHECK(limiter.admit("a", t0 + 4s) == 6);
}

TEST_CASE("rate_limiter: clients have their own buckets; rate 0 allows everything and stores nothing") {
  rate_limiter limiter(1.0, 1.0);
  const auto t0 = std::chrono::steady_clock::time_point{} + 100s;
  CHECK(limiter.admit("a", t0) == 0);
  CHECK(limiter.admit("a", t0) == 1);
  CHECK(limiter.admit("b", t0) == 0);
  rate_limiter off(0.0, 1.0);
  for (int i = 0; i < 100; ++i) CHECK(off.admit("a", t0) == 0);
  CHECK(off.clients() == 0);
}

TEST_CASE("rate_limiter: the table holds at most max_clients; the least recently seen goes first") {
  rate_limiter limiter(1.0, 1.0, 2);
  const auto t0 = std::chrono::steady_clock::time_point{} + 100s;
  CHECK(limiter.admit("a", t0) == 0);
  CHECK(limiter.admit("b", t0) == 0);
  CHECK(limiter.admit("a", t0) == 1);  // a seen again: b is now the least recent
  CHECK(limiter.admit("c", t0) == 0);  // evicts b
  CHECK(limiter.clients() == 2);
  CHECK(limiter.admit("a", t0) == 1);  // a kept its empty bucket
  CHECK(limiter.admit("b", t0) == 0);  // b was forgotten: a fresh bucket (evicts c)
  CHECK(limiter.admit("c", t0) == 0);
  CHECK(limiter.clients() == 2);
}
