#include "core/services/run_service.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <map>

#include "core/events/log_codec.hpp"
#include "core/runs/run.hpp"
#include "core/runs/session_channel.hpp"
#include "core/time_format.hpp"
#include "tests/core/services/services_fixture.hpp"
#include "tests/support/manual_clock.hpp"

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

// --- time, on a manual clock: nothing below sleeps ---

namespace {

using agw::core::event_type;

// The types of the session's committed events, in id order.
std::vector<event_type> committed_types(const services_fixture& f, const std::string& session_id) {
  std::map<std::int64_t, event_type> by_id;
  const auto data = f.db.committed();
  auto add = [&](const agw::core::event_batch_record& b) {
    if (b.session_id != session_id) return;
    for (const auto& e : agw::core::decode_log_frames(b.frames, b.first_id)) by_id[e->id] = e->type;
  };
  if (auto it = data.event_batches.find(session_id); it != data.event_batches.end())
    for (const auto& b : it->second) add(b);
  std::vector<event_type> out;
  for (const auto& [id, type] : by_id) out.push_back(type);
  return out;
}

std::size_t tokens_in(const std::vector<event_type>& types) {
  return static_cast<std::size_t>(std::count(types.begin(), types.end(), event_type::token));
}

bool ended(const std::vector<event_type>& types) { return !types.empty() && types.back() == event_type::done; }

}  // namespace

TEST_CASE("run_service: an Idempotency-Key is honoured for its TTL, and forgotten once a later key purges it") {
  agw::test::manual_clock clock;
  services_fixture f(clock);
  auto s = f.create();
  auto first = f.await(f.runs.start(s.session, message("once", "k1")));
  f.settle();
  CHECK(f.db.committed().idempotency.at({s.session.id, "k1"}).created_at_ms == clock.wall_ms());

  // At exactly the TTL the key still holds: the retry attaches to the first run.
  clock.advance(std::chrono::milliseconds(agw::core::run_service::idempotency_ttl_ms));
  auto retry = f.await(f.runs.start(s.session, message("once", "k1")));
  CHECK(retry.attached);
  CHECK(retry.run_id == first.run_id);

  // One ms later it has expired: the next keyed start purges it...
  clock.advance(std::chrono::milliseconds(1));
  auto other = f.await(f.runs.start(s.session, message("another", "k2")));
  CHECK_FALSE(other.attached);
  f.settle();
  CHECK(f.db.committed().idempotency.count({s.session.id, "k1"}) == 0);
  // ...and the same key now starts a new run.
  auto again = f.await(f.runs.start(s.session, message("once", "k1")));
  CHECK_FALSE(again.attached);
  CHECK(again.run_id != first.run_id);
  f.settle();
  CHECK(clock.pending_waits() == 0);
}

TEST_CASE("run_service: a key past its TTL starts a new run, even before any other key purged it") {
  agw::test::manual_clock clock;
  services_fixture f(clock);
  auto s = f.create();
  auto first = f.await(f.runs.start(s.session, message("once", "k1")));
  f.settle();
  clock.advance(std::chrono::milliseconds(agw::core::run_service::idempotency_ttl_ms + 1));
  auto again = f.await(f.runs.start(s.session, message("once", "k1")));
  CHECK_FALSE(again.attached);
  CHECK(again.run_id != first.run_id);
  f.settle();
  CHECK(f.db.committed().idempotency.at({s.session.id, "k1"}).created_at_ms == clock.wall_ms());
}

TEST_CASE("run_service: the mock agent's think time and paced tokens follow the clock") {
  agw::test::manual_clock clock;
  services_fixture f(clock);
  // 500 ms of thought, then 4 tokens at 10 per second: due at +0, +100, +200, +300 ms.
  auto s = f.create(R"({"config": {"mock": {"think_ms": 500, "tokens": 4, "tokens_per_second": 10}}})");
  const auto began = clock.wall_ms();
  f.await(f.runs.start(s.session, message("go")));
  f.run_until([&] { return clock.pending_waits() == 1; });  // the think sleep
  CHECK(tokens_in(committed_types(f, s.session.id)) == 0);

  clock.advance(std::chrono::milliseconds(499));
  f.poll();
  CHECK(clock.pending_waits() == 1);
  CHECK(tokens_in(committed_types(f, s.session.id)) == 0);
  clock.advance(std::chrono::milliseconds(1));
  // The first token goes at once; the run then sleeps until the second is due.
  f.run_until([&] { return tokens_in(committed_types(f, s.session.id)) == 1 && clock.pending_waits() == 1; });

  for (std::size_t i = 1; i < 4; ++i) {
    CAPTURE(i);
    clock.advance(std::chrono::milliseconds(99));
    f.poll();
    CHECK(tokens_in(committed_types(f, s.session.id)) == i);
    clock.advance(std::chrono::milliseconds(1));
    f.run_until([&] { return tokens_in(committed_types(f, s.session.id)) == i + 1; });
  }
  // The last token ends the run: its done is committed and its answer stamped with the clock's time.
  f.run_until([&] { return ended(committed_types(f, s.session.id)) && !f.hub.live_state(s.session.id).run; });
  CHECK(clock.pending_waits() == 0);
  CHECK(tokens_in(committed_types(f, s.session.id)) == 4);
  const auto messages = f.db.committed().messages;
  REQUIRE(messages.size() == 2);
  std::int64_t answered_at = 0;
  for (const auto& [id, m] : messages)
    if (m.role == "assistant") answered_at = m.created_at_ms;
  CHECK(answered_at == began + 800);
}

TEST_CASE("run_service: an abort cuts the agent's sleep short without the clock moving") {
  agw::test::manual_clock clock;
  services_fixture f(clock);
  auto s = f.create(slow_session);
  auto started = f.await(f.runs.start(s.session, message("think")));
  f.run_until([&] { return clock.pending_waits() == 1; });
  CHECK(f.await(f.runs.abort(s.session.id)) == started.run_id);
  f.run_until([&] { return ended(committed_types(f, s.session.id)) && !f.hub.live_state(s.session.id).run; });
  CHECK(clock.pending_waits() == 0);
  CHECK(tokens_in(committed_types(f, s.session.id)) == 0);
  CHECK(f.await(f.runs.abort(s.session.id)) == std::nullopt);
}
