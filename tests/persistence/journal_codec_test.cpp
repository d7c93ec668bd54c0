#include "persistence/journal_codec.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/storage/store_error.hpp"
#include "tests/persistence/sqlite_fixture.hpp"

namespace {

using agw::core::event_batch_record;
using agw::persistence::decode_journal_entries;
using agw::persistence::encode_journal_entries;

}  // namespace

TEST_CASE("journal_codec: several sessions' batches round-trip byte for byte") {
  auto a = agw::test::make_batch("3f2b8c1e-0000-4000-8000-000000000001", 1, 3);
  a.created_at_ms = 1700000000123;
  event_batch_record empty_frames{"s2", 7, 7, "", 5};
  event_batch_record odd{"s3", 9007199254740990, 9007199254740993, "line\nwith 12 34 5 6\n\nnumbers", 0};
  const event_batch_record* batches[] = {&a, &empty_frames, &odd};
  const auto decoded = decode_journal_entries(encode_journal_entries(batches));
  REQUIRE(decoded.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(decoded[i].session_id == batches[i]->session_id);
    CHECK(decoded[i].first_id == batches[i]->first_id);
    CHECK(decoded[i].last_id == batches[i]->last_id);
    CHECK(decoded[i].created_at_ms == batches[i]->created_at_ms);
    CHECK(decoded[i].frames == batches[i]->frames);
  }
  CHECK(decode_journal_entries("").empty());
}

TEST_CASE("journal_codec: a malformed row is a store_error, not a crash") {
  const char* rows[] = {
      "s",                  // no header line end
      "s\n1 2 3\nabc",      // three numbers
      "s\n1 2 3 x\nabc",    // not a number
      "s\n1 2 3 10\nabc",   // length past the end
      "s\n1 2 3 -1\nabc",   // negative length
      "s\n1 2 3 3 9\nabc",  // trailing field
  };
  for (const char* row : rows) {
    CAPTURE(row);
    CHECK_THROWS_AS(decode_journal_entries(row), agw::core::store_error);
  }
}
