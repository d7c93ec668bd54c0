// core::event_forwarder over the fake store: committed events move into the outbox
// in batches with the cursor, each event once, and the outbox hands a session's
// batches out in order.
#include "core/services/event_forwarder.hpp"

#include <doctest/doctest.h>

#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>

#include "tests/core/services/services_fixture.hpp"
#include "tests/support/store_rows.hpp"

using namespace agw::test;

namespace {

void append(services_fixture& fx, const std::string& sid, std::int64_t first, std::int64_t last) {
  auto write = [b = make_batch(sid, first, last)](agw::core::store_connection& c) { c.append_events(b); };
  fx.await(fx.store.async_write(std::move(write), boost::asio::use_awaitable));
}

std::vector<std::int64_t> forwarded_ids(const std::vector<agw::core::webhook_delivery_record>& deliveries) {
  std::vector<std::int64_t> out;
  for (const auto& d : deliveries) {
    const auto payload = boost::json::parse(d.payload);  // named: the loop refers into it
    for (const auto& e : payload.at("events").as_array()) out.push_back(e.at("id").as_int64());
  }
  return out;
}

std::vector<std::int64_t> id_range(std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> out;
  for (auto id = first; id <= last; ++id) out.push_back(id);
  return out;
}

}  // namespace

TEST_CASE("event forwarder: every committed event once, in batches, with the cursor") {
  services_fixture fx;
  const auto sid = fx.create(R"({"event_webhook_url":"https://hooks.example/events"})").session.id;
  const auto quiet = fx.create().session.id;  // no URL: never forwarded
  int wakes = 0;
  auto forwarder =
      std::make_shared<agw::core::event_forwarder>(fx.store, fx.clock, std::chrono::milliseconds(200), [&] { ++wakes; });
  CHECK(fx.await(forwarder->pass()) == 0);
  append(fx, sid, 1, 150);
  append(fx, quiet, 1, 5);
  CHECK(fx.await(forwarder->pass()) == 1);  // 100 of them: one batch per session and pass
  CHECK(fx.await(forwarder->pass()) == 1);  // the other 50
  CHECK(fx.await(forwarder->pass()) == 0);
  CHECK(wakes == 2);
  auto deliveries = fx.await(fx.deliveries.list(sid));
  REQUIRE(deliveries.size() == 2);
  CHECK(forwarded_ids(deliveries) == id_range(1, 150));
  CHECK(deliveries[0].event_first_id == 1);
  CHECK(deliveries[1].event_first_id == 101);
  CHECK(deliveries[0].url == "https://hooks.example/events");
  CHECK(boost::json::parse(deliveries[1].payload).at("last_event_id") == 150);
  CHECK(fx.await(fx.deliveries.list(quiet)).empty());

  // In order: only the earliest pending batch of the session is due.
  auto due = fx.await(fx.deliveries.claim_due(fx.clock.wall_ms() + 1000, 10, 0));
  REQUIRE(due.size() == 1);
  CHECK(due[0].event_first_id == 1);

  append(fx, sid, 151, 152);
  CHECK(fx.await(forwarder->pass()) == 1);
  CHECK(forwarded_ids(fx.await(fx.deliveries.list(sid))) == id_range(1, 152));
}
