// persistence/journal_tails.{hpp,cpp}: tails and claims per session.
#include "persistence/journal_tails.hpp"

#include <doctest/doctest.h>

#include "tests/support/store_rows.hpp"

using agw::persistence::journal_tails;

namespace {

auto tokens(std::int64_t first, std::int64_t last) { return agw::test::make_token_frames(first, last); }

}  // namespace

TEST_CASE("journal_tails: the oldest claim is the oldest record a tail holds; a segmented or forgotten session holds none") {
  journal_tails tails;
  auto a = tails.open("a");
  auto b = tails.open("b");
  auto idle = tails.open("idle");  // opened, never adds: not part of the release
  CHECK_FALSE(tails.oldest_claim());
  CHECK(tails.add(*a, tokens(1, 2), 7) == 0);
  CHECK(tails.add(*b, tokens(1, 1), 3) == 0);
  CHECK(tails.add(*b, tokens(2, 3), 9) == 1);  // a session's oldest record is its claim
  CHECK(tails.oldest_claim() == 3);
  CHECK(tails.segmented(*b, 3) == 0);
  CHECK(tails.oldest_claim() == 7);
  tails.forget("a");
  CHECK_FALSE(tails.oldest_claim());
  // What the journal thread adds for a session deleted meanwhile: nobody keeps it.
  tails.add(*a, tokens(3, 3), 11);
  CHECK_FALSE(tails.oldest_claim());
  tails.add(*b, tokens(4, 4), 12);
  CHECK(tails.oldest_claim() == 12);
}

TEST_CASE("journal_tails: a segment of the tail's prefix leaves what joined it meanwhile, with its claim") {
  journal_tails tails;
  auto s = tails.open("s");
  tails.add(*s, tokens(1, 3), 5);
  tails.add(*s, tokens(4, 4), 6);
  tails.add(*s, tokens(5, 6), 8);
  // A segment asked for at 1..4 commits while 5..6 were journaled.
  CHECK(tails.segmented(*s, 4) == 2);
  CHECK(tails.oldest_claim() == 8);
  CHECK(tails.oldest_id("s") == 5);
  const auto rest = tails.after("s", 0, 10);
  REQUIRE(rest.size() == 2);
  CHECK(rest.front()->id == 5);
  CHECK(rest.back()->id == 6);
  // Ids below the tail: nothing to drop.
  CHECK(tails.segmented(*s, 2) == 2);
  CHECK(tails.segmented(*s, 6) == 0);
  CHECK_FALSE(tails.oldest_claim());
  CHECK(tails.oldest_id("s") == 0);
}
