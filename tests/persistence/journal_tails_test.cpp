// persistence/journal_tails.{hpp,cpp}: tails and claims per session.
#include "persistence/journal_tails.hpp"

#include <doctest/doctest.h>

using agw::persistence::journal_tails;

TEST_CASE("journal_tails: the oldest claim is the smallest held; a segmented or forgotten session holds none") {
  journal_tails tails;
  auto a = tails.open("a");
  auto b = tails.open("b");
  auto idle = tails.open("idle");  // opened, never claims: not part of the cut
  CHECK_FALSE(tails.oldest_claim());
  tails.claim(*a, 7);
  tails.claim(*b, 3);
  tails.claim(*b, 9);  // a session's first claim stands until its segment
  CHECK(tails.oldest_claim() == 3);
  tails.segmented(*b);
  CHECK(tails.oldest_claim() == 7);
  tails.forget("a");
  CHECK_FALSE(tails.oldest_claim());
  // A job in flight when its session was deleted may still claim: nobody keeps that claim.
  tails.claim(*a, 1);
  CHECK_FALSE(tails.oldest_claim());
  tails.claim(*b, 11);
  CHECK(tails.oldest_claim() == 11);
}
