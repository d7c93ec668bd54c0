#include "core/services/run_service.hpp"

#include <doctest/doctest.h>

#include <boost/asio/post.hpp>

#include "core/runs/run.hpp"
#include "core/runs/session_channel.hpp"
#include "core/time_format.hpp"
#include "tests/core/services/services_fixture.hpp"

namespace {

using agw::core::api_error;
using agw::core::error_code;
using agw::core::start_request;
using agw::test::error_of;
using agw::test::services_fixture;

start_request message(std::string content, std::optional<std::string> key = std::nullopt) {
  return start_request{std::move(content), std::nullopt, std::move(key)};
}

// A session whose runs think for a long while before their first token (until aborted).
constexpr const char* slow_session = R"({"config": {"provider": "mock", "mock": {"think_ms": 60000}}})";

}  // namespace

TEST_CASE("run_service: start checkpoints the user message, then the run goes to its done") {
  services_fixture f;
  auto s = f.create();
  auto started = f.await(f.runs.start(s.session, message("hello there", "k1")));
  CHECK_FALSE(started.attached);
  CHECK_FALSE(started.run_id.empty());
  CHECK(started.after_id == 0);
  REQUIRE(started.channel);
  CHECK(started.channel->session_id() == s.session.id);
  // Durable before start() returned: the checkpoint with the user message and the key.
  auto at_start = f.db.committed();
  REQUIRE(at_start.checkpoints.size() >= 1);
  CHECK(at_start.checkpoints.front().state.find("hello there") != std::string::npos);
  CHECK(at_start.idempotency.size() == 1);

  f.settle();
  auto done = f.db.committed();
  CHECK(done.messages.size() == 2);  // user + assistant
  CHECK(f.db.committed_event_ids(s.session.id).size() > 2);
}

TEST_CASE("run_service: the same Idempotency-Key with the same content attaches and stores nothing") {
  services_fixture f;
  auto s = f.create();
  auto first = f.await(f.runs.start(s.session, message("once", "key-1")));
  f.settle();
  const auto before = f.db.committed();

  auto again = f.await(f.runs.start(s.session, message("once", "key-1")));
  CHECK(again.attached);
  CHECK(again.run_id == first.run_id);
  CHECK(again.after_id == first.after_id);
  REQUIRE(again.channel);
  f.settle();
  const auto after = f.db.committed();
  CHECK(after.checkpoints.size() == before.checkpoints.size());
  CHECK(after.messages.size() == before.messages.size());
  CHECK(after.idempotency.size() == 1);
}

TEST_CASE("run_service: the same Idempotency-Key with different content is idempotency_mismatch") {
  services_fixture f;
  auto s = f.create();
  f.await(f.runs.start(s.session, message("first", "key-2")));
  f.settle();
  const auto before = f.db.committed();
  CHECK(error_of([&] { f.await(f.runs.start(s.session, message("second", "key-2"))); }) == error_code::idempotency_mismatch);
  const auto after = f.db.committed();
  CHECK(after.checkpoints.size() == before.checkpoints.size());
  CHECK(after.messages.size() == before.messages.size());
}

TEST_CASE("run_service: keys older than the TTL are purged when a new key is stored") {
  services_fixture f;
  auto s = f.create();
  f.db.seed([&](agw::test::fake_data& d) {
    const auto old = agw::core::now_ms() - agw::core::run_service::idempotency_ttl_ms - 1000;
    d.idempotency[{s.session.id, "old-key"}] = {s.session.id, "old-key", "whatever", "old-run", 0, old};
  });
  auto fresh = f.await(f.runs.start(s.session, message("hi", "new-key")));
  CHECK_FALSE(fresh.attached);
  f.settle();
  const auto keys = f.db.committed().idempotency;
  CHECK(keys.count({s.session.id, "old-key"}) == 0);
  REQUIRE(keys.count({s.session.id, "new-key"}) == 1);
  CHECK(keys.at({s.session.id, "new-key"}).run_id == fresh.run_id);
}

TEST_CASE("run_service: a start while a run is live is run_in_progress with run_id and stream_url, nothing stored") {
  services_fixture f;
  auto s = f.create(slow_session);
  auto first = f.await(f.runs.start(s.session, message("first")));
  const auto before = f.db.committed();

  std::optional<api_error> conflict;
  try {
    f.await(f.runs.start(s.session, message("second")));
  } catch (const api_error& e) {
    conflict = e;
  }
  REQUIRE(conflict);
  CHECK(conflict->code() == error_code::run_in_progress);
  CHECK(conflict->extra().at("run_id").as_string() == first.run_id);
  CHECK(conflict->extra().at("stream_url").as_string() == "/sessions/" + s.session.id + "/events");
  const auto after = f.db.committed();
  CHECK(after.checkpoints.size() == before.checkpoints.size());
  CHECK(after.messages.size() == before.messages.size());

  // Abort ends the thinking run; then the session takes a new run.
  auto aborting = f.await(f.runs.abort(s.session.id));
  CHECK(aborting == first.run_id);
  f.settle();
  CHECK(f.await(f.runs.abort(s.session.id)) == std::nullopt);
  auto next = f.await(f.runs.start(s.session, message("third")));
  CHECK(next.run_id != first.run_id);
  CHECK(f.await(f.runs.abort(s.session.id)) == next.run_id);
}

TEST_CASE("run_service: a keyed retry that meets its original's live run (key not yet stored) is still a 409") {
  services_fixture f;
  auto s = f.create();
  // A run reserved by someone else, whose key never lands: the retry waits briefly, then conflicts.
  auto channel = f.hub.channel(s.session.id, 0);
  auto live = std::make_shared<agw::core::run>(channel->strand(), f.clock, "run-elsewhere", f.clock.wall_ms(), 0);
  boost::asio::post(channel->strand(), [channel, live] { channel->set_live_run(live); });
  f.settle();
  CHECK(error_of([&] { f.await(f.runs.start(s.session, message("x", "k"))); }) == error_code::run_in_progress);
  CHECK(f.db.committed().idempotency.empty());
  boost::asio::post(channel->strand(), [channel] { channel->set_live_run(nullptr); });
}

TEST_CASE("run_service: abort of an unknown session is not_found; of an idle one, nullopt") {
  services_fixture f;
  CHECK(error_of([&] { f.await(f.runs.abort("00000000-0000-4000-8000-000000000000")); }) == error_code::not_found);
  auto s = f.create();
  CHECK(f.await(f.runs.abort(s.session.id)) == std::nullopt);
}

TEST_CASE("run_service: a run with a callback_url writes its outbox row and says so") {
  services_fixture f;
  auto s = f.create();
  start_request r = message("call me");
  r.callback_url = "https://example.com/hook";
  f.await(f.runs.start(s.session, r));
  f.settle();
  CHECK(f.db.committed().deliveries.size() == 1);
  CHECK(f.outbox_wakes.load() == 1);
}
