// core/session_hub.{hpp,cpp} (the hub lives in core/, beside the channels it keeps).
#include "core/session_hub.hpp"

#include <doctest/doctest.h>

#include "core/api_error.hpp"
#include "core/clock.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json/parse.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/agents/mock_agent.hpp"
#include "core/agents/unavailable_agent.hpp"
#include "core/events/log_codec.hpp"
#include "core/runs/run.hpp"
#include "core/runs/run_driver.hpp"
#include "core/time_format.hpp"
#include "core/tools/tool_registry.hpp"
#include "tests/support/fake_event_writer.hpp"
#include "tests/support/fake_store.hpp"

namespace {

// Real time: these cases never wait on it.
const agw::core::real_clock wall_clock;

namespace net = boost::asio;
using agw::core::event_type;
using agw::core::subscriber;
using close_reason = agw::core::subscriber::close_reason;

class recorder final : public subscriber {
 public:
  void deliver(const agw::core::frame_batch& frames) override {
    for (const auto& f : frames->frames) ids.push_back(f->id);
  }
  void close(close_reason why) override { closed.push_back(why); }

  std::vector<std::int64_t> ids;
  std::vector<close_reason> closed;
};

agw::core::session_record session_with(const std::string& id, const std::string& config) {
  agw::core::session_record s;
  s.id = id;
  s.thread_id = "thread-" + id;
  s.config = boost::json::parse(config).as_object();
  return s;
}

// A hub over the fake store; the test drives the io_context.
struct hub_fixture {
  ~hub_fixture() {
    settle();
    store.stop();
  }
  void settle() {
    io.restart();
    io.run();
  }
  template <class F>
  void on_strand(const std::shared_ptr<agw::core::session_channel>& c, F f) {
    net::post(c->strand(), std::move(f));
  }
  std::shared_ptr<recorder> subscribe(const std::shared_ptr<agw::core::session_channel>& c) {
    auto rec = std::make_shared<recorder>();
    on_strand(c, [c, rec] { c->subscribe(rec, c->last_committed_id()); });
    settle();
    return rec;
  }
  // Drives one run of `s` with the agent the hub picks for it; returns the run's committed events.
  std::vector<agw::core::frame_ptr> run_once(const agw::core::session_record& s) {
    auto channel = hub.channel(s.id, 0);
    auto r = std::make_shared<agw::core::run>(channel->strand(), wall_clock, "run-" + s.id, agw::core::now_ms(),
                                              channel->last_assigned_id());
    channel->set_live_run(r);  // the io_context is idle: we are on the strand
    agw::core::conversation_state conversation;
    agw::core::message_record user;
    user.id = "user-1";
    user.session_id = s.id;
    user.role = "user";
    user.content = "hi";
    user.seq = 1;
    conversation.messages.push_back(user);
    conversation.run = agw::core::checkpoint_run{r->id(), "running", user.id, r->started_at_ms(), std::nullopt, 0, std::nullopt};
    agw::core::run_request request{s, conversation, 0, std::nullopt, nullptr};
    auto driving = agw::core::drive_run(channel, r, std::move(request), hub.agent_for(s), hub.tools(), stats);
    net::co_spawn(channel->strand(), std::move(driving), [](std::exception_ptr) {});
    settle();
    std::vector<agw::core::frame_ptr> out;
    const auto data = db.committed();
    if (auto it = data.event_batches.find(s.id); it != data.event_batches.end())
      for (const auto& b : it->second)
        for (auto& e : agw::core::decode_log_frames(b.frames, b.first_id)) out.push_back(std::move(e));
    return out;
  }

  agw::test::fake_db db;
  net::io_context io;
  agw::core::metrics stats;
  agw::core::settings config;
  agw::core::tool_registry tools = agw::core::make_builtin_tools();
  agw::core::tool_runner runner{tools, 1, config.tool_timeout};
  agw::core::store_executor store{db.factory(), {.readers = 1}};
  agw::test::fake_event_writer writer{store};
  agw::core::session_hub hub{io.get_executor(), store, writer, stats, config, runner};
};

}  // namespace

TEST_CASE("session_hub: one channel per session id, created with the given last event id") {
  hub_fixture f;
  auto a = f.hub.channel("a", 5);
  REQUIRE(a);
  CHECK(a->session_id() == "a");
  CHECK(a->last_assigned_id() == 5);
  CHECK(a->last_committed_id() == 5);
  // The same pointer again; a later last_event_id does not reset it.
  CHECK(f.hub.channel("a", 5) == a);
  CHECK(f.hub.channel("a", 99) == a);
  CHECK(a->last_assigned_id() == 5);
  auto b = f.hub.channel("b", 0);
  CHECK(b != a);

  // Ids continue from the last one given.
  std::int64_t id = 0;
  f.on_strand(a, [&] { id = a->publish("run-1", event_type::token, "content", "x"); });
  f.settle();
  CHECK(id == 6);
  CHECK(f.db.committed_event_ids("a") == std::vector<std::int64_t>{6});
}

TEST_CASE("session_hub: find returns the channel only once it exists") {
  hub_fixture f;
  CHECK(f.hub.find("a") == nullptr);
  auto a = f.hub.channel("a", 0);
  CHECK(f.hub.find("a") == a);
  CHECK(f.hub.find("b") == nullptr);
}

TEST_CASE("session_hub: live_state gives the live run and the last committed id") {
  hub_fixture f;
  auto unknown = f.hub.live_state("nobody");
  CHECK_FALSE(unknown.run);
  CHECK(unknown.last_event_id == 0);

  auto a = f.hub.channel("a", 3);
  CHECK(f.hub.live_state("a").last_event_id == 3);
  CHECK_FALSE(f.hub.live_state("a").run);

  auto r = std::make_shared<agw::core::run>(a->strand(), wall_clock, "run-1", 1234, 3);
  f.on_strand(a, [&] {
    a->set_live_run(r);
    a->publish("run-1", event_type::token, "content", "x");
  });
  f.settle();
  auto live = f.hub.live_state("a");
  REQUIRE(live.run);
  CHECK(live.run->id == "run-1");
  CHECK(live.run->started_at_ms == 1234);
  CHECK(live.last_event_id == 4);

  f.on_strand(a, [&] { a->set_live_run(nullptr); });
  f.settle();
  CHECK_FALSE(f.hub.live_state("a").run);
  CHECK(f.hub.live_state("a").last_event_id == 4);
}

TEST_CASE("session_hub: session_deleted closes the channel; a read from before it is not_found, a session made again is live") {
  hub_fixture f;
  agw::core::session_record read;
  read.id = "a";
  read.thread_id = "thread-1";
  read.last_event_id = 2;
  auto a = f.hub.channel(read);
  auto rec = f.subscribe(a);
  a.reset();
  f.hub.session_deleted("a", "thread-1");
  // The writer let go of the session at once, before any new channel of the id can open it.
  CHECK(f.writer.forgotten == std::vector<std::string>{"a"});
  f.settle();
  auto gone = f.hub.find("a");
  CHECK(gone == nullptr);
  CHECK(rec->closed == std::vector<close_reason>{close_reason::session_deleted});
  CHECK_FALSE(f.hub.live_state("a").run);
  CHECK(f.stats.channels_open == 0);

  // The same read, handed to the hub after the DELETE: the session it read is gone.
  try {
    f.hub.channel(read);
    FAIL("a channel was made for a deleted session");
  } catch (const agw::core::api_error& e) {
    CHECK(e.code() == agw::core::error_code::not_found);
  }
  CHECK(f.hub.find("a") == nullptr);  // nothing half made

  // A session made again with the same id is another thread: a live channel, numbering anew.
  agw::core::session_record again = read;
  again.thread_id = "thread-2";
  again.last_event_id = 0;
  auto b = f.hub.channel(again);
  CHECK_FALSE(b->closed());
  CHECK(b->last_committed_id() == 0);
  // Other sessions are untouched.
  CHECK_FALSE(f.hub.channel("other", 0)->closed());
}

TEST_CASE("session_hub: session_deleted of a session never used: a read from before it is not_found") {
  hub_fixture f;
  agw::core::session_record read;
  read.id = "ghost";
  read.thread_id = "thread-g";
  f.hub.session_deleted("ghost", "thread-g");
  f.settle();
  CHECK(f.hub.find("ghost") == nullptr);
  CHECK_THROWS_AS(f.hub.channel(read), agw::core::api_error);
  CHECK(f.hub.channel_count() == 0);
}

TEST_CASE("session_hub: session_deleted aborts the live run; its end reaches the followers unstored") {
  hub_fixture f;
  auto s = session_with("a", R"({"mock": {"think_ms": 60000}})");
  auto a = f.hub.channel("a", 0);
  auto rec = f.subscribe(a);
  auto r = std::make_shared<agw::core::run>(a->strand(), wall_clock, "run-a", agw::core::now_ms(), 0);
  a->set_live_run(r);
  agw::core::conversation_state conversation;
  agw::core::message_record user;
  user.id = "user-1";
  user.role = "user";
  user.content = "hi";
  conversation.messages.push_back(user);
  agw::core::run_request request{s, conversation, 0, std::nullopt, nullptr};
  auto driving = agw::core::drive_run(a, r, std::move(request), f.hub.agent_for(s), f.hub.tools(), f.stats);
  bool ended = false;
  net::co_spawn(a->strand(), std::move(driving), [&](std::exception_ptr) { ended = true; });
  f.io.restart();
  f.io.poll();  // thinking
  f.hub.session_deleted("a", "thread-a");
  f.settle();
  CHECK(ended);
  CHECK(r->abort_requested());
  CHECK(a->closed());
  CHECK(rec->closed == std::vector<close_reason>{close_reason::session_deleted});
  CHECK(a->live_run() == nullptr);
  CHECK(f.stats.runs_aborted.load() == 1);
  CHECK(f.stats.runs_live.load() == 0);
  // The follower saw the run end (status thinking, then aborted, usage, done) ...
  REQUIRE(rec->ids.size() == 4);
  CHECK(rec->ids.back() == 4);
  // ... but only the first event, committed before the delete, was stored.
  CHECK(f.db.committed_event_ids("a") == std::vector<std::int64_t>{1});
}

TEST_CASE("session_hub: close_all_streams closes every subscriber with draining and keeps the channels") {
  hub_fixture f;
  auto a = f.hub.channel("a", 0);
  auto b = f.hub.channel("b", 0);
  auto ra = f.subscribe(a);
  auto rb1 = f.subscribe(b);
  auto rb2 = f.subscribe(b);
  f.hub.close_all_streams();
  f.settle();
  CHECK(ra->closed == std::vector<close_reason>{close_reason::draining});
  CHECK(rb1->closed == std::vector<close_reason>{close_reason::draining});
  CHECK(rb2->closed == std::vector<close_reason>{close_reason::draining});
  CHECK(f.hub.find("a") == a);
  CHECK(f.hub.find("b") == b);
  CHECK_FALSE(a->closed());
  CHECK_FALSE(b->closed());
}

TEST_CASE("session_hub: agent_for picks the agent config.provider names, mock by default") {
  hub_fixture f;
  auto by_default = f.hub.agent_for(session_with("a", "{}"));
  REQUIRE(by_default);
  CHECK(dynamic_cast<agw::core::mock_agent*>(by_default.get()) != nullptr);
  // The mock is stateless: every session shares one instance.
  CHECK(f.hub.agent_for(session_with("b", R"({"provider": "mock"})")) == by_default);
  CHECK(dynamic_cast<agw::core::unavailable_agent*>(f.hub.agent_for(session_with("c", R"({"provider": "openai"})")).get()) !=
        nullptr);
  CHECK(dynamic_cast<agw::core::unavailable_agent*>(f.hub.agent_for(session_with("d", R"({"provider": "nope"})")).get()) !=
        nullptr);
  CHECK(dynamic_cast<agw::core::unavailable_agent*>(f.hub.agent_for(session_with("e", R"({"provider": 42})")).get()) != nullptr);
}

TEST_CASE("session_hub: the default agent runs the mock; an unknown provider's run fails with provider_unavailable") {
  hub_fixture f;
  const auto ok = f.run_once(session_with("a", R"({"mock": {"tokens": 2}})"));
  REQUIRE(ok.size() == 5);  // thinking, 2 tokens, usage, done
  CHECK(ok.back()->type == event_type::done);
  CHECK(boost::json::parse(ok.back()->data()).at("assistant_data").at("status").as_string() == "complete");

  const auto failed = f.run_once(session_with("b", R"({"provider": "nope"})"));
  REQUIRE(failed.size() == 4);  // thinking, error, usage, done
  CHECK(failed[1]->type == event_type::error);
  const auto error = boost::json::parse(failed[1]->data()).as_object();
  CHECK(error.at("code").as_string() == "provider_unavailable");
  CHECK(error.at("message").as_string() == "provider 'nope' is not available in this build");
  CHECK(failed.back()->type == event_type::done);
  CHECK(boost::json::parse(failed.back()->data()).at("assistant_data").at("status").as_string() == "error");
  CHECK(f.stats.runs_failed.load() == 1);
  CHECK(f.stats.runs_completed.load() == 1);
}

namespace {

using namespace std::chrono_literals;

// What session_service::require hands a service: a row read after the hub's epoch was taken.
agw::core::session_record read_now(agw::core::session_hub& hub, const std::string& id, std::int64_t last_event_id,
                                   const std::string& thread_id = "thread-1") {
  agw::core::session_record s;
  s.id = id;
  s.thread_id = thread_id;
  s.read_epoch = hub.epoch();
  s.last_event_id = last_event_id;
  return s;
}

// Eviction passes until at most `left` channels remain (at most ~100): a commit's completion
// may let go of its last reference on the store's thread a moment after it ran, and a pass
// meeting that reference skips the channel, as it should.
void evict_until(hub_fixture& f, std::size_t left) {
  for (int pass = 0; pass < 100 && f.hub.channel_count() > left; ++pass) {
    f.hub.evict_idle(0ms);
    f.settle();
    if (f.hub.channel_count() > left) std::this_thread::sleep_for(1ms);
  }
}

void publish_tokens(hub_fixture& f, const std::shared_ptr<agw::core::session_channel>& c, int n) {
  f.on_strand(c, [c, n] {
    for (int i = 0; i < n; ++i) c->publish_outside_run(event_type::custom, agw::core::event_source::ai_agent, {{"n", i}});
  });
  f.settle();
}

}  // namespace

TEST_CASE("session_hub: an idle channel nobody holds is evicted, and the next one numbers on from it") {
  hub_fixture f;
  auto a = f.hub.channel(read_now(f.hub, "a", 0));
  // A read that began before the events below (and before the eviction): it saw last id 0.
  const auto stale = read_now(f.hub, "a", 0);
  publish_tokens(f, a, 3);
  CHECK(a->last_committed_id() == 3);
  CHECK(f.stats.channels_open == 1);

  // Quiet for less than idle_for: not a candidate.
  f.hub.evict_idle(1h);
  f.settle();
  CHECK(f.hub.find("a") == a);

  a.reset();
  evict_until(f, 0);
  CHECK(f.hub.find("a") == nullptr);
  CHECK(f.hub.channel_count() == 0);
  CHECK(f.stats.channels_open == 0);
  CHECK(f.stats.channels_evicted == 1);

  // The old read would have started at 1: the hub remembers the drop.
  auto b = f.hub.channel(stale);
  CHECK(b->last_committed_id() == 3);
  publish_tokens(f, b, 1);
  CHECK(f.db.committed_event_ids("a") == std::vector<std::int64_t>{1, 2, 3, 4});
  // A read after the drop is taken as it is (it sees the store as the drop left it).
  b.reset();
  evict_until(f, 0);
  CHECK(f.hub.find("a") == nullptr);
  CHECK(f.hub.channel(read_now(f.hub, "a", 4))->last_committed_id() == 4);
}

TEST_CASE("session_hub: a held channel, one with a subscriber or with a run stays") {
  hub_fixture f;
  auto held = f.hub.channel("held", 0);
  auto followed = f.hub.channel("followed", 0);
  auto rec = f.subscribe(followed);
  auto running = f.hub.channel("running", 0);
  auto r = std::make_shared<agw::core::run>(running->strand(), wall_clock, "run-1", 1, 0);
  f.on_strand(running, [&] { running->set_live_run(r); });
  f.settle();
  CHECK(followed->quiet_since_ms() == 0);
  CHECK(running->quiet_since_ms() == 0);
  CHECK(held->quiet_since_ms() > 0);

  followed.reset();
  running.reset();
  f.hub.evict_idle(0ms);
  f.settle();
  CHECK(f.hub.channel_count() == 3);
  CHECK(f.stats.channels_evicted == 0);

  // Once their run ended and their follower left, they go too.
  auto ch = f.hub.find("followed");
  f.on_strand(ch, [&] { ch->unsubscribe(rec.get()); });
  auto rn = f.hub.find("running");
  f.on_strand(rn, [&] { rn->set_live_run(nullptr); });
  f.settle();
  ch.reset();
  rn.reset();
  evict_until(f, 1);
  CHECK(f.hub.channel_count() == 1);
  CHECK(f.hub.find("held") == held);
}

TEST_CASE("session_hub: a deletion applies to reads of the deleted session, an eviction to reads of the same session") {
  hub_fixture f;
  // The first session of id "a" is used, evicted (last id 2), then deleted.
  auto first = f.hub.channel(read_now(f.hub, "a", 0, "thread-1"));
  const auto before_eviction = read_now(f.hub, "a", 0, "thread-1");
  publish_tokens(f, first, 2);
  first.reset();
  evict_until(f, 0);
  REQUIRE(f.hub.find("a") == nullptr);
  f.hub.session_deleted("a", "thread-1");
  CHECK_THROWS_AS(f.hub.channel(before_eviction), agw::core::api_error);
  // Made again (a new thread id), read before a later eviction of it: its own last id, not
  // the deleted session's.
  auto second = f.hub.channel(read_now(f.hub, "a", 0, "thread-2"));
  const auto stale_second = read_now(f.hub, "a", 0, "thread-2");
  CHECK(second->last_committed_id() == 0);
  publish_tokens(f, second, 1);
  second.reset();
  evict_until(f, 0);
  REQUIRE(f.hub.find("a") == nullptr);
  CHECK(f.hub.channel(stale_second)->last_committed_id() == 1);
}

TEST_CASE("session_hub: evict_idle takes its candidates round robin, so channels that cannot go do not starve the others") {
  hub_fixture f;
  std::vector<std::shared_ptr<agw::core::session_channel>> held;
  for (int i = 0; i < 6; ++i) held.push_back(f.hub.channel("s" + std::to_string(i), 0));
  // Three stay held; with two candidates a pass, the free three still go within a few passes.
  for (int i = 0; i < 3; ++i) held[static_cast<std::size_t>(i) * 2].reset();
  for (int pass = 0; pass < 6; ++pass) {
    f.hub.evict_idle(0ms, 2);
    f.settle();
  }
  CHECK(f.hub.channel_count() == 3);
  CHECK(f.stats.channels_evicted == 3);
}

TEST_CASE("session_hub: a read older than the drops the hub remembers is refused, to be read again") {
  hub_fixture f;
  f.hub.remember_drops_for(0ms);
  auto a = f.hub.channel(read_now(f.hub, "a", 0));
  const auto stale = read_now(f.hub, "b", 0);  // any session: the hub cannot tell which drops it forgot
  publish_tokens(f, a, 2);
  a.reset();
  evict_until(f, 0);
  REQUIRE(f.hub.find("a") == nullptr);
  f.hub.evict_idle(0ms);  // forgets the drop
  CHECK_THROWS_AS(f.hub.channel(stale), agw::core::api_error);
  CHECK(f.hub.find("b") == nullptr);  // nothing half made
  // Read again, it is exact.
  CHECK(f.hub.channel(read_now(f.hub, "a", 2))->last_committed_id() == 2);
}

TEST_CASE("session_hub: a session made again before the hub hears of the deletion keeps its channel and writer state") {
  hub_fixture f;
  auto record = [](const std::string& thread) {
    agw::core::session_record s;
    s.id = "a";
    s.thread_id = thread;
    return s;
  };
  auto old_channel = f.hub.channel(record("thread-1"));
  // The delete has committed and a session was made again with the id (an AG-UI threadId),
  // but session_deleted has not run: the old channel is not handed to the new session.
  try {
    f.hub.channel(record("thread-2"));
    FAIL("the new session was handed the deleted one's channel");
  } catch (const agw::core::api_error& e) {
    CHECK(e.code() == agw::core::error_code::unavailable);
  }
  f.hub.session_deleted("a", "thread-1");
  f.settle();
  CHECK(old_channel->closed());
  CHECK(f.writer.forgotten == std::vector<std::string>{"a"});
  auto fresh = f.hub.channel(record("thread-2"));
  CHECK_FALSE(fresh->closed());

  // The other order: the new session's channel exists when the deletion is heard of.
  f.hub.session_deleted("a", "thread-2");
  f.settle();
  auto third = f.hub.channel(record("thread-3"));
  f.hub.session_deleted("a", "thread-0");  // an older session of the id, heard of late
  f.settle();
  CHECK_FALSE(third->closed());
  CHECK(f.hub.find("a") == third);
  CHECK(f.writer.forgotten == std::vector<std::string>{"a", "a"});  // not a third time
  // A read of any deleted session of the id is answered not_found, channel or not.
  CHECK_THROWS_AS(f.hub.channel(record("thread-1")), agw::core::api_error);
  CHECK_THROWS_AS(f.hub.channel(record("thread-0")), agw::core::api_error);
  CHECK(f.hub.channel(record("thread-3")) == third);
}
