#pragma once
// The implementations every port conformance suite runs against. Each suite is
// written once as TEST_CASE_TEMPLATE(..., impl, AGW_STORE_IMPLS) and only talks to
// core::store_connection, so a new store (PostgreSQL) joins by adding a struct
// here: open() hands out a connection, and every open() of one object reaches
// the same store (cases that need a second connection call it twice).
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/storage/store_connection.hpp"
#include "tests/persistence/sqlite_fixture.hpp"
#include "tests/support/fake_store.hpp"
#include "tests/support/store_rows.hpp"
#ifdef AGW_TEST_POSTGRES
#include "tests/postgres/pg_test_db.hpp"
#endif

namespace agw::test {

// The in-memory store core's unit tests use, with SQLite's foreign keys.
struct fake_impl {
  fake_db db;
  fake_impl() { db.foreign_keys = true; }
  std::unique_ptr<core::store_connection> open() { return db.connect(); }
};

// SQLite on a migrated throw-away file, without journal tails (the event log is
// read from its segments only, as in a process that writes no events).
struct sqlite_impl {
  temp_db db;
  std::unique_ptr<core::store_connection> open() { return db.open(); }
};

#ifdef AGW_TEST_POSTGRES
// PostgreSQL: a fresh database per object on the server scripts/pg_temp.sh started
// (tests_ports_pg, the same suites built with AGW_TEST_POSTGRES).
struct pg_impl {
  pg_test_db db;
  std::unique_ptr<core::store_connection> open() { return db.open(); }
};
#endif

// --- helpers shared by the suites ---

inline std::vector<std::int64_t> id_range(std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = first; i <= last; ++i) out.push_back(i);
  return out;
}

inline std::vector<std::int64_t> ids_of(const std::vector<core::frame_ptr>& events) {
  std::vector<std::int64_t> out;
  for (const auto& e : events) out.push_back(e->id);
  return out;
}

inline std::vector<std::string> ids_of(const core::session_page& page) {
  std::vector<std::string> out;
  for (const auto& s : page.sessions) out.push_back(s.id);
  return out;
}

inline std::vector<std::int64_t> seqs_of(const std::vector<core::message_record>& messages) {
  std::vector<std::int64_t> out;
  for (const auto& m : messages) out.push_back(m.seq);
  return out;
}

inline std::vector<std::string> ids_of(const std::vector<core::webhook_delivery_record>& deliveries) {
  std::vector<std::string> out;
  for (const auto& d : deliveries) out.push_back(d.id);
  return out;
}

// Whether `f` throws store_error: the one failure every port promises. The text
// is each store's own (SQLite's constraint names, PostgreSQL's), so not compared.
template <class F>
bool throws_store_error(F f) {
  try {
    f();
  } catch (const core::store_error&) {
    return true;
  }
  return false;
}

}  // namespace agw::test

TYPE_TO_STRING(agw::test::fake_impl);
TYPE_TO_STRING(agw::test::sqlite_impl);

// Every implementation a conformance case runs against: the fake and SQLite in
// tests_ports, PostgreSQL in tests_ports_pg (which needs a server, so runs apart).
#ifdef AGW_TEST_POSTGRES
TYPE_TO_STRING(agw::test::pg_impl);
#define AGW_STORE_IMPLS agw::test::pg_impl
#else
#define AGW_STORE_IMPLS agw::test::fake_impl, agw::test::sqlite_impl
#endif

// Prints id lists in failure messages.
template <>
struct doctest::StringMaker<std::vector<std::int64_t>> {
  static doctest::String convert(const std::vector<std::int64_t>& ids) {
    std::string out = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
    return (out + "]").c_str();
  }
};
template <>
struct doctest::StringMaker<std::vector<std::string>> {
  static doctest::String convert(const std::vector<std::string>& ids) {
    std::string out = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + ids[i];
    return (out + "]").c_str();
  }
};
