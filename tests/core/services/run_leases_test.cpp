// Run ownership across nodes through the run_leases port (docs/scale-out.md): the
// fake store keeps leases as PostgreSQL does, and the fake writer fences batches.
#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/events/log_codec.hpp"
#include "core/events/sse_format.hpp"
#include "core/runs/run.hpp"
#include "core/runs/session_channel.hpp"
#include "core/services/run_takeover.hpp"
#include "tests/core/services/services_fixture.hpp"

namespace {

using agw::core::error_code;
using agw::core::start_request;
using agw::test::error_of;
using agw::test::services_fixture;
namespace net = boost::asio;

start_request message(std::string content, std::optional<std::string> key = std::nullopt) {
  return start_request{std::move(content), std::nullopt, std::move(key)};
}

constexpr const char* slow_session = R"({"config": {"provider": "mock", "mock": {"think_ms": 60000}}})";
constexpr std::int64_t far_future = 4'000'000'000'000;

// Another node's lease on the session.
void seed_foreign_lease(agw::test::fake_db& db, const std::string& session_id, std::int64_t expires_at_ms,
                        std::int64_t token = 5) {
  db.seed(
      [&](agw::test::fake_data& d) { d.leases[session_id] = {session_id, "their-run", "node-b", token, expires_at_ms, false}; });
}

// Events another node committed: status events `from`..`to` of run "their-run".
void seed_foreign_events(agw::test::fake_db& db, const std::string& session_id, std::int64_t from, std::int64_t to) {
  std::vector<agw::core::frame_ptr> frames;
  for (auto id = from; id <= to; ++id)
    frames.push_back(std::make_shared<const agw::core::event_frame>(
        agw::core::make_event_frame(id, agw::core::event_type::status, "their-run", {{"status", "thinking"}})));
  db.seed([&](agw::test::fake_data& d) {
    d.event_batches[session_id].push_back({session_id, from, to, agw::core::encode_log_frames(frames), 0});
    d.sessions[session_id].last_event_id = std::max(d.sessions[session_id].last_event_id, to);
  });
}

bool gap_free(const std::vector<std::int64_t>& ids) {
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] != static_cast<std::int64_t>(i + 1)) return false;
  return true;
}

std::shared_ptr<agw::core::run> live_run_of(services_fixture& f, const std::shared_ptr<agw::core::session_channel>& channel) {
  auto read = [channel]() -> net::awaitable<std::shared_ptr<agw::core::run>> { co_return channel->live_run(); };
  return f.await(net::co_spawn(channel->strand(), read(), net::use_awaitable));
}

}  // namespace

TEST_CASE("run leases: a run takes its session's lease in the user message's job and releases it after its done") {
  services_fixture f;
  auto s = f.create();
  auto started = f.await(f.runs.start(s.session, message("hello", "k1")));
  auto at_start = f.db.committed();
  REQUIRE(at_start.leases.count(s.session.id) == 1);
  const auto lease = at_start.leases.at(s.session.id);
  CHECK(lease.run_id == started.run_id);
  CHECK(lease.node_id == "local");
  CHECK(lease.token == 1);
  f.settle();
  f.store.stop();  // the release is a write job: committed before stop() returns
  auto after = f.db.committed();
  CHECK(after.leases.at(s.session.id).run_id.empty());
  CHECK(after.leases.at(s.session.id).token == 1);
  CHECK(gap_free(f.db.committed_event_ids(s.session.id)));
}

TEST_CASE("run leases: another node's live lease is a 409 run_in_progress with its run id, and nothing is stored") {
  services_fixture f;
  auto s = f.create();
  seed_foreign_lease(f.db, s.session.id, far_future);
  const auto before = f.db.committed();
  try {
    f.await(f.runs.start(s.session, message("hello", "k1")));
    FAIL("expected a 409");
  } catch (const agw::core::api_error& e) {
    CHECK(e.code() == error_code::run_in_progress);
    CHECK(e.extra().at("run_id") == "their-run");
  }
  const auto after = f.db.committed();
  CHECK(after.checkpoints.size() == before.checkpoints.size());
  CHECK(after.messages.size() == before.messages.size());
  CHECK(after.idempotency.empty());
  CHECK(after.leases.at(s.session.id).node_id == "node-b");
  CHECK(f.stats.runs_admitted.load() == 0);

  // Lapsed: the next start first closes what the dead node left (here nothing: the lease
  // is taken and given back, token 6), then takes it (token 7) and runs to its done.
  seed_foreign_lease(f.db, s.session.id, 0);
  auto started = f.await(f.runs.start(s.session, message("hello again")));
  CHECK(f.db.committed().leases.at(s.session.id).token == 7);
  CHECK(f.db.committed().leases.at(s.session.id).run_id == started.run_id);
  f.settle();
}

TEST_CASE("run leases: a run numbers on from the events another node committed") {
  services_fixture f;
  auto s = f.create();
  seed_foreign_events(f.db, s.session.id, 1, 7);  // the channel (made from s, last id 0) has not seen them
  auto started = f.await(f.runs.start(s.session, message("hello")));
  CHECK(started.after_id == 7);
  f.settle();
  const auto ids = f.db.committed_event_ids(s.session.id);
  CHECK(ids.size() > 8);
  CHECK(gap_free(ids));
}

TEST_CASE("run leases: the owner renews its lease, and an abort recorded by another node stops the run") {
  services_fixture f;
  f.runs.set_leases({"node-a", std::chrono::milliseconds(150)});
  auto s = f.create(slow_session);
  auto started = f.await(f.runs.start(s.session, message("hello")));
  const auto first_expiry = f.db.committed().leases.at(s.session.id).expires_at_ms;
  f.run_until([&] { return f.db.committed().leases.at(s.session.id).expires_at_ms > first_expiry; });

  f.db.seed([&](agw::test::fake_data& d) { d.leases.at(s.session.id).abort_requested = true; });
  f.run_until([&] { return f.stats.runs_aborted.load() == 1; });
  f.settle();
  CHECK(f.stats.runs_aborted.load() == 1);
  bool aborted = false;
  for (const auto& [id, m] : f.db.committed().messages) aborted = aborted || (m.role == "assistant" && m.status == "aborted");
  CHECK(aborted);
  CHECK(started.channel);
}

TEST_CASE("run leases: abort on a node that does not own the run is recorded for its owner") {
  services_fixture f;
  auto s = f.create();
  seed_foreign_lease(f.db, s.session.id, far_future);
  auto aborted = f.await(f.runs.abort(s.session.id));
  REQUIRE(aborted);
  CHECK(*aborted == "their-run");
  CHECK(f.db.committed().leases.at(s.session.id).abort_requested);
}

TEST_CASE("run leases: a renewal that finds the lease taken stops the run, which writes nothing more") {
  services_fixture f;
  f.runs.set_leases({"node-a", std::chrono::milliseconds(150)});
  auto s = f.create(slow_session);
  auto started = f.await(f.runs.start(s.session, message("hello")));
  // Its first events are committed (status thinking), then another node takes the lease.
  f.run_until([&] { return !f.db.committed_event_ids(s.session.id).empty(); });
  const auto committed_before = f.db.committed_event_ids(s.session.id);
  const auto checkpoints_before = f.db.committed().checkpoints.size();
  const auto token = f.db.committed().leases.at(s.session.id).token;
  seed_foreign_lease(f.db, s.session.id, far_future, token + 1);
  f.run_until([&] { return f.stats.runs_fenced_out.load() == 1; });
  f.run_until([&] { return !live_run_of(f, started.channel); });
  f.settle();
  CHECK(f.db.committed_event_ids(s.session.id) == committed_before);
  CHECK(f.db.committed().checkpoints.size() == checkpoints_before);
  for (const auto& [id, m] : f.db.committed().messages) CHECK(m.role != "assistant");
  CHECK(f.stats.runs_aborted.load() == 0);
}

TEST_CASE("run leases: a batch written after the lease was taken is fenced out; the channel then follows the log") {
  services_fixture f;  // a 10 s lease: no renewal in this test, the writer's fence decides
  auto s = f.create(slow_session);
  auto started = f.await(f.runs.start(s.session, message("hello")));
  f.run_until([&] { return !f.db.committed_event_ids(s.session.id).empty(); });
  const auto committed_before = f.db.committed_event_ids(s.session.id);
  const auto token = f.db.committed().leases.at(s.session.id).token;
  seed_foreign_lease(f.db, s.session.id, far_future, token + 1);
  // The abort makes the run publish (status aborted, usage): the writer refuses them.
  f.await(f.runs.abort(s.session.id));
  f.run_until([&] { return f.stats.runs_fenced_out.load() == 1; });
  f.run_until([&] { return !live_run_of(f, started.channel); });
  CHECK(f.db.committed_event_ids(s.session.id) == committed_before);
  for (const auto& [id, m] : f.db.committed().messages) CHECK(m.role != "assistant");

  // The new owner closed the run (its error + done) and released; this node follows and
  // its next run numbers on from the log.
  const auto last = committed_before.back();
  seed_foreign_events(f.db, s.session.id, last + 1, last + 2);
  f.db.seed([&](agw::test::fake_data& d) { d.leases.at(s.session.id).run_id.clear(); });
  f.run_until([&] { return !started.channel->fenced(); });
  auto next = f.await(f.runs.start(s.session, message("again")));
  CHECK(next.after_id == last + 2);
  f.await(f.runs.abort(s.session.id));  // a slow session: stop it rather than wait
  f.settle();
  CHECK(gap_free(f.db.committed_event_ids(s.session.id)));
}

TEST_CASE("run leases: a survivor's sweep closes the run of a lapsed lease as interrupted, once") {
  services_fixture f;
  auto s = f.create(slow_session);
  // The "dead node": a run started here whose lease then lapses (its renewals stop).
  f.runs.set_leases({"node-dead", std::chrono::milliseconds(100'000)});
  auto started = f.await(f.runs.start(s.session, message("hello")));
  f.run_until([&] { return !f.db.committed_event_ids(s.session.id).empty(); });
  f.db.seed([&](agw::test::fake_data& d) { d.leases.at(s.session.id).expires_at_ms = 1; });

  std::vector<std::pair<std::string, std::int64_t>> repaired;
  agw::core::run_takeover::options opts;
  opts.node_id = "node-b";
  opts.lease = std::chrono::milliseconds(1000);
  opts.on_repaired = [&](const std::string& id, std::int64_t last) { repaired.emplace_back(id, last); };
  auto takeover = std::make_shared<agw::core::run_takeover>(f.store, f.stats, f.clock, opts);
  CHECK(f.await(takeover->sweep()) == 1);
  CHECK(f.await(takeover->sweep()) == 0);
  REQUIRE(repaired.size() == 1);
  CHECK(repaired[0].first == s.session.id);
  const auto ids = f.db.committed_event_ids(s.session.id);
  CHECK(gap_free(ids));
  CHECK(repaired[0].second == ids.back());
  bool interrupted = false;
  for (const auto& [id, m] : f.db.committed().messages) interrupted = interrupted || m.status == "interrupted";
  CHECK(interrupted);
  CHECK(f.db.committed().leases.at(s.session.id).run_id.empty());
  CHECK(f.stats.runs_taken_over.load() == 1);
  // The old owner is fenced out at its next write; stop it so the fixture settles.
  f.await(f.runs.abort(s.session.id));
  f.run_until([&] { return !live_run_of(f, started.channel); });
  CHECK(f.db.committed_event_ids(s.session.id) == ids);
}
