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
using agw::persistence::journal_entry;

}  // namespace

TEST_CASE("journal_codec: several sessions' batches round-trip byte for byte, with their incarnation") {
  auto a = agw::test::make_batch("3f2b8c1e-0000-4000-8000-000000000001", 1, 3);
  a.created_at_ms = 1700000000123;
  const journal_entry entries[] = {
      {a, "thread-a"},
      {{"s2", 7, 7, "", 5}, ""},
      {{"s3", 9007199254740990, 9007199254740993, "line\nwith 12 34 5 6\n\nnumbers", 0}, "t\n 3"},
  };
  const journal_entry* rows[] = {&entries[0], &entries[1], &entries[2]};
  const auto decoded = decode_journal_entries(encode_journal_entries(rows));
  REQUIRE(decoded.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(decoded[i].batch.session_id == entries[i].batch.session_id);
    CHECK(decoded[i].batch.first_id == entries[i].batch.first_id);
    CHECK(decoded[i].batch.last_id == entries[i].batch.last_id);
    CHECK(decoded[i].batch.created_at_ms == entries[i].batch.created_at_ms);
    CHECK(decoded[i].batch.frames == entries[i].batch.frames);
    CHECK(decoded[i].thread_id == entries[i].thread_id);
  }
  CHECK(decode_journal_entries("").empty());
}

TEST_CASE("journal_codec: an entry an older version wrote (no thread id) decodes with an empty one") {
  const auto decoded = decode_journal_entries("s1\n4 5 99 3\nabcs2\n6 6 99 1 2\nt2x");
  REQUIRE(decoded.size() == 2);
  CHECK(decoded[0].batch.session_id == "s1");
  CHECK(decoded[0].batch.frames == "abc");
  CHECK(decoded[0].thread_id.empty());
  CHECK(decoded[1].batch.first_id == 6);
  CHECK(decoded[1].thread_id == "t2");
  CHECK(decoded[1].batch.frames == "x");
}

TEST_CASE("journal_codec: a malformed row is a store_error, not a crash") {
  const char* rows[] = {
      "s",                    // no header line end
      "s\n1 2 3\nabc",        // three numbers
      "s\n1 2 3 x\nabc",      // not a number
      "s\n1 2 3 10\nabc",     // length past the end
      "s\n1 2 3 -1\nabc",     // negative length
      "s\n1 2 3 3 9\nabc",    // thread id past the end
      "s\n1 2 3 3 0 7\nabc",  // trailing field
  };
  for (const char* row : rows) {
    CAPTURE(row);
    CHECK_THROWS_AS(decode_journal_entries(row), agw::core::store_error);
  }
}
