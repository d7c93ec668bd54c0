// idempotency_keys: the Idempotency-Key of POST /messages, per session, and the run
// it started; a duplicate insert is how a racing second request learns it lost.
#include <doctest/doctest.h>

#include <string>

#include "tests/ports/store_impls.hpp"

using namespace agw::test;

TEST_CASE_TEMPLATE("idempotency_keys: insert and find round-trip, per session and exact key", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("s2", 2));
  store->insert_idempotency_key({"s", "k1", "hash1", "run-1", 10, 1000});
  store->insert_idempotency_key({"s", "k2", "hash2", "run-2", 20, 2000});
  store->insert_idempotency_key({"s2", "k1", "hash3", "run-3", 30, 3000});

  const auto found = store->find_idempotency_key("s", "k1");
  REQUIRE(found);
  CHECK(found->session_id == "s");
  CHECK(found->key == "k1");
  CHECK(found->content_hash == "hash1");
  CHECK(found->run_id == "run-1");
  CHECK(found->first_event_id == 10);
  CHECK(found->created_at_ms == 1000);
  CHECK(store->find_idempotency_key("s2", "k1")->run_id == "run-3");  // keys are per session
  struct row {
    const char* session;
    const char* key;
  };
  for (const auto& r : {row{"s", "k3"}, row{"s3", "k1"}, row{"s", "K1"}, row{"s", ""}, row{"", "k1"}}) {
    CAPTURE(r.session);
    CAPTURE(r.key);
    CHECK_FALSE(store->find_idempotency_key(r.session, r.key));
  }
}

TEST_CASE_TEMPLATE("idempotency_keys: a duplicate insert is refused and keeps the first", impl, AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_idempotency_key({"s", "k1", "hash1", "run-1", 10, 1000});
  CHECK(throws_store_error([&] { store->insert_idempotency_key({"s", "k1", "other", "run-9", 0, 5000}); }));
  CHECK(store->find_idempotency_key("s", "k1")->run_id == "run-1");
  CHECK(store->find_idempotency_key("s", "k1")->content_hash == "hash1");
  // A key of an unknown session is refused too.
  CHECK(throws_store_error([&] { store->insert_idempotency_key({"nope", "k1", "h", "r", 0, 0}); }));
  CHECK_FALSE(store->find_idempotency_key("nope", "k1"));
}

TEST_CASE_TEMPLATE("idempotency_keys: purge drops the keys strictly older than the cut, of every session", impl,
                   AGW_STORE_IMPLS) {
  impl store_impl;
  auto store = store_impl.open();
  store->insert_session(make_session("s", 1));
  store->insert_session(make_session("s2", 1));
  store->insert_idempotency_key({"s", "k1", "hash1", "run-1", 10, 1000});
  store->insert_idempotency_key({"s", "k2", "hash2", "run-2", 20, 2000});
  store->insert_idempotency_key({"s2", "k1", "hash3", "run-3", 30, 3000});
  struct row {
    std::int64_t older_than;
    bool s_k1, s_k2, s2_k1;
  };
  const row rows[] = {
      {0, true, true, true},     {1000, true, true, true},    {1001, false, true, true},
      {2000, false, true, true}, {3001, false, false, false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.older_than);
    store->purge_idempotency_keys(r.older_than);
    CHECK(store->find_idempotency_key("s", "k1").has_value() == r.s_k1);
    CHECK(store->find_idempotency_key("s", "k2").has_value() == r.s_k2);
    CHECK(store->find_idempotency_key("s2", "k1").has_value() == r.s2_k1);
  }
  // A purged key can be used again.
  store->insert_idempotency_key({"s", "k1", "hash4", "run-4", 40, 4000});
  CHECK(store->find_idempotency_key("s", "k1")->run_id == "run-4");
}
