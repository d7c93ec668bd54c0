#include "core/runs/session_channel.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/events/log_codec.hpp"
#include "core/events/sse_format.hpp"
#include "tests/support/fake_event_writer.hpp"
#include "tests/support/fake_store.hpp"

// Prints id lists in failure messages.
template <>
struct doctest::StringMaker<std::vector<std::int64_t>> {
  static doctest::String convert(const std::vector<std::int64_t>& ids) {
    std::string out = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
    return (out + "]").c_str();
  }
};

namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using agw::core::frame_batch;
using agw::core::replay_info;
using agw::core::session_channel;
using agw::core::store_executor;
using agw::core::subscriber;
using agw::test::fake_db;

constexpr const char* session_id = "s1";

// Records what the channel hands it, and whether each frame was already durable then.
class recorder final : public subscriber {
 public:
  explicit recorder(const fake_db& db) : db_(db) {}
  void deliver(const frame_batch& frames) override {
    ++batches;
    for (const auto& f : frames->frames) {
      ids.push_back(f->id);
      texts.push_back(f->sse);
      if (!db_.event_committed(session_id, f->id)) uncommitted_deliveries.push_back(f->id);
    }
  }
  void close(close_reason why) override { closed.push_back(why); }

  std::vector<std::int64_t> ids;
  std::vector<std::string> texts;
  std::vector<std::int64_t> uncommitted_deliveries;
  std::vector<close_reason> closed;
  int batches = 0;

 private:
  const fake_db& db_;
};

std::vector<std::int64_t> range(std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = first; i <= last; ++i) out.push_back(i);
  return out;
}

bool strictly_increasing(const std::vector<std::int64_t>& ids) {
  for (std::size_t i = 1; i < ids.size(); ++i)
    if (ids[i] <= ids[i - 1]) return false;
  return true;
}

boost::json::object token(std::int64_t n) { return {{"content", "t" + std::to_string(n)}}; }

struct fixture {
  explicit fixture(session_channel::options opts = {}, std::int64_t last_event_id = 0)
      : channel(std::make_shared<session_channel>(io.get_executor(), session_id, last_event_id, services, opts)) {}
  ~fixture() {
    channel.reset();
    store.stop();
  }

  template <class F>
  void on_strand(F f) {
    net::post(channel->strand(), std::move(f));
  }
  void run() {
    io.restart();
    io.run();
  }
  void run_for(std::chrono::milliseconds d) {
    io.restart();
    io.run_for(d);
  }
  // Publishes ids one per commit, so that each becomes its own log batch.
  void publish_one_by_one(std::int64_t count) {
    for (std::int64_t i = 0; i < count; ++i) {
      on_strand([this] { channel->publish("run-1", agw::core::event_type::token, token(channel->last_assigned_id() + 1)); });
      run();
    }
  }
  // An idle channel (no run, no subscriber) releases its ring; a passive subscriber keeps it.
  std::shared_ptr<recorder> keep_ring() {
    auto keeper = subscribe(0);
    run();
    return keeper;
  }
  std::shared_ptr<recorder> subscribe(std::int64_t after_id, std::optional<replay_info>* info = nullptr) {
    auto rec = std::make_shared<recorder>(db);
    on_strand([this, rec, after_id, info] {
      channel->subscribe(rec, after_id, [info](const replay_info& i) {
        if (info) *info = i;
      });
    });
    return rec;
  }

  fake_db db;
  net::io_context io;
  agw::core::metrics stats;
  store_executor store{db.factory(), {.readers = 1}};
  agw::test::fake_event_writer writer{store};
  agw::core::channel_services services{store, writer, stats};
  std::shared_ptr<session_channel> channel;
};

int log_reads_of(const fake_db& db) {
  int reads = 0;
  for (const auto& c : db.calls()) reads += c.ends_with(":events_after");
  return reads;
}

// Publishes `count` tokens, one every `gap`, on the channel's strand.
net::awaitable<void> publish_slowly(std::shared_ptr<session_channel> channel, int count, std::chrono::milliseconds gap) {
  for (int i = 0; i < count; ++i) {
    channel->publish("run-1", agw::core::event_type::token, token(channel->last_assigned_id() + 1));
    net::steady_timer timer(channel->strand(), gap);
    co_await timer.async_wait(net::use_awaitable);
  }
}

}  // namespace

TEST_CASE("session_channel: publish assigns consecutive ids and commits them in batches") {
  fixture fx({}, 10);  // the fake writer stores every batch as its own row
  std::vector<std::int64_t> ids;
  fx.on_strand([&] {
    for (int i = 0; i < 5; ++i) ids.push_back(fx.channel->publish("run-1", agw::core::event_type::token, token(i)));
    CHECK(fx.channel->last_assigned_id() == 15);
    CHECK(fx.channel->last_committed_id() == 10);
  });
  fx.run();
  CHECK(ids == range(11, 15));
  CHECK(fx.channel->last_committed_id() == 15);
  CHECK(fx.channel->snapshot().last_event_id == 15);
  CHECK(fx.db.committed_event_ids(session_id) == range(11, 15));
  // The first event goes alone; the four published while it was in flight share the next batch.
  const auto batches = fx.db.committed().event_batches.at(session_id);
  REQUIRE(batches.size() == 2);
  CHECK(batches[0].first_id == 11);
  CHECK(batches[0].last_id == 11);
  CHECK(batches[1].first_id == 12);
  CHECK(batches[1].last_id == 15);
  CHECK(batches[1].session_id == session_id);
  // The log holds exactly the serialized frames.
  const auto stored = agw::core::decode_log_frames(batches[0].frames, batches[0].first_id);
  REQUIRE(stored.size() == 1);
  CHECK(stored[0]->sse == agw::core::make_event_frame(11, agw::core::event_type::token, "run-1", token(0)).sse);
  CHECK(fx.stats.events_published == 5);
  CHECK(fx.stats.event_batches_committed == 2);
  // Each committed batch observes how long its oldest event waited.
  CHECK(fx.stats.event_commit_wait_seconds.read().count == 2);
}

TEST_CASE("session_channel: subscribers receive frames only after the commit") {
  fixture fx;
  auto rec = fx.subscribe(0);
  fx.db.hold_commits();
  fx.on_strand([&] {
    for (int i = 0; i < 3; ++i) fx.channel->publish("run-1", agw::core::event_type::token, token(i));
  });
  fx.run_for(100ms);
  CHECK(fx.db.commits_waiting == 1);
  CHECK(rec->ids.empty());
  CHECK(fx.channel->last_committed_id() == 0);
  CHECK(fx.channel->snapshot().last_event_id == 0);

  fx.db.release_commits();
  fx.run();
  CHECK(rec->ids == range(1, 3));
  CHECK(rec->uncommitted_deliveries.empty());
  CHECK(rec->texts[1] == agw::core::make_event_frame(2, agw::core::event_type::token, "run-1", token(1)).sse);
  CHECK(fx.channel->last_committed_id() == 3);
}

TEST_CASE("session_channel: a cursor at the first batch, before its commit reaches the channel, hears the oldest id 1") {
  // The store shows the first batch a moment before its completion reaches the strand:
  // a client may resume from that id while the channel has released nothing yet.
  fixture fx;
  fx.db.hold_commits();
  fx.on_strand([&] {
    for (int i = 0; i < 3; ++i) fx.channel->publish("run-1", agw::core::event_type::token, token(i));
  });
  fx.run_for(100ms);
  REQUIRE(fx.channel->last_committed_id() == 0);
  std::optional<replay_info> info;
  auto rec = fx.subscribe(3, &info);
  fx.run_for(100ms);
  REQUIRE(info);
  CHECK(info->last_event_id == 3);
  CHECK(info->oldest_event_id == 1);
  CHECK_FALSE(info->gap);
  fx.db.release_commits();
  fx.run();
  CHECK(fx.channel->last_committed_id() == 3);
}

TEST_CASE("session_channel: a cursor inside the ring gets exactly the missing suffix, then live frames") {
  struct row {
    std::int64_t after_id;
    std::vector<std::int64_t> replayed;
  };
  // The ring holds 1..8 (capacity 10); 9 and 10 are published after subscribing.
  const row rows[] = {
      {0, range(1, 8)}, {1, range(2, 8)}, {5, range(6, 8)}, {7, {8}}, {8, {}}, {12, {}},
  };
  for (const auto& r : rows) {
    CAPTURE(r.after_id);
    fixture fx({.ring_size = 10});
    auto keeper = fx.keep_ring();
    fx.publish_one_by_one(8);
    std::optional<replay_info> info;
    auto rec = fx.subscribe(r.after_id, &info);
    fx.run();
    CHECK(rec->ids == r.replayed);
    REQUIRE(info);
    CHECK(info->last_event_id == r.after_id);
    CHECK(info->replayed == static_cast<std::int64_t>(r.replayed.size()));
    CHECK_FALSE(info->gap);
    CHECK(info->oldest_event_id == 1);
    const auto calls = fx.db.calls();
    CHECK(std::none_of(calls.begin(), calls.end(), [](const auto& c) { return c.ends_with(":events_after"); }));

    fx.on_strand([&] {
      fx.channel->publish("run-1", agw::core::event_type::token, token(9));
      fx.channel->publish("run-1", agw::core::event_type::token, token(10));
    });
    fx.run();
    auto expected = r.replayed;
    for (std::int64_t id : {9, 10}) expected.push_back(id);
    CHECK(rec->ids == expected);
    CHECK(rec->uncommitted_deliveries.empty());
  }
}

TEST_CASE("session_channel: a cursor older than the ring is served from the log, then the ring, then live") {
  struct row {
    std::int64_t after_id;
    std::size_t replay_page;
  };
  const row rows[] = {{0, 256}, {3, 5}, {3, 1}, {15, 5}, {16, 2}};
  for (const auto& r : rows) {
    CAPTURE(r.after_id);
    CAPTURE(r.replay_page);
    fixture fx({.ring_size = 4, .replay_page = r.replay_page});
    auto keeper = fx.keep_ring();
    fx.publish_one_by_one(20);  // log 1..20, ring 17..20
    std::optional<replay_info> info;
    auto rec = fx.subscribe(r.after_id, &info);
    fx.run();
    CHECK(rec->ids == range(r.after_id + 1, 20));
    REQUIRE(info);
    CHECK(info->replayed == 20 - r.after_id);
    CHECK_FALSE(info->gap);
    CHECK(info->oldest_event_id == 1);
    CHECK(fx.channel->subscriber_count() == 2);
    const auto log_reads = log_reads_of(fx.db);
    if (r.after_id + 1 < 17) {
      // Pages of replay_page until the ring covers the rest.
      const auto from_log = static_cast<std::size_t>(16 - r.after_id);
      CHECK(log_reads == static_cast<int>((from_log + r.replay_page - 1) / r.replay_page));
    } else {
      CHECK(log_reads == 0);
    }

    fx.publish_one_by_one(2);
    CHECK(rec->ids == range(r.after_id + 1, 22));
    CHECK(rec->uncommitted_deliveries.empty());
  }
}

TEST_CASE("session_channel: a log replay racing live publishes has no duplicates or gaps") {
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    fixture fx({.ring_size = 4, .replay_page = 3});
    fx.publish_one_by_one(20);
    fx.db.read_delay_ms = 15;  // each log read takes a while; commits carry on meanwhile
    std::optional<replay_info> info;
    auto rec = fx.subscribe(2 + round, &info);
    net::co_spawn(fx.channel->strand(), publish_slowly(fx.channel, 30, std::chrono::milliseconds(2 + round)), net::detached);
    fx.run();
    REQUIRE(info);
    CHECK(rec->ids == range(3 + round, 50));
    CHECK(log_reads_of(fx.db) >= 2);
    CHECK(strictly_increasing(rec->ids));
    CHECK(rec->uncommitted_deliveries.empty());
    CHECK_FALSE(info->gap);
  }
}

TEST_CASE("session_channel: retention gaps are reported with the oldest held id") {
  fixture fx({.ring_size = 3, .retention = 5});
  fx.publish_one_by_one(20);  // single-event batches: the log keeps 16..20, the ring 18..20
  CHECK(fx.db.committed_event_ids(session_id) == range(16, 20));
  std::optional<replay_info> info;
  auto rec = fx.subscribe(3, &info);
  fx.run();
  REQUIRE(info);
  CHECK(rec->ids == range(16, 20));
  CHECK(info->gap);
  CHECK(info->oldest_event_id == 16);
  CHECK(info->replayed == 5);

  // A cursor the log still covers: no gap.
  std::optional<replay_info> info2;
  auto rec2 = fx.subscribe(15, &info2);
  fx.run();
  REQUIRE(info2);
  CHECK(rec2->ids == range(16, 20));
  CHECK_FALSE(info2->gap);
}

TEST_CASE("session_channel: a trim between the log's oldest id and its events: the gap names the first event held") {
  fixture fx({.ring_size = 3, .retention = 5});
  fx.publish_one_by_one(20);  // the log keeps 16..20, the ring 18..20
  // The replay's read job reads the log's oldest id (16), then its events; a segment
  // write of the session trims 16 away in between (another connection's commit).
  fx.db.once_after_oldest_event_id(
      [](agw::test::fake_data& d) { std::erase_if(d.event_batches[session_id], [](const auto& b) { return b.last_id < 17; }); });
  std::optional<replay_info> info;
  auto rec = fx.subscribe(3, &info);
  fx.run();
  REQUIRE(info);
  CHECK(rec->ids == range(17, 20));
  CHECK(info->gap);
  CHECK(info->oldest_event_id == 17);  // not 16, which the replay never had
  CHECK(info->replayed == 4);
}

// With retention below the ring size, the ring holds more than the log: a
// resume should still get everything the ring holds.
TEST_CASE("session_channel: retention smaller than the ring still replays what the ring holds") {
  fixture fx({.ring_size = 10, .retention = 3});
  auto keeper = fx.keep_ring();
  fx.publish_one_by_one(20);  // log keeps 18..20, ring holds 11..20
  CHECK(fx.db.committed_event_ids(session_id) == range(18, 20));
  std::optional<replay_info> info;
  auto rec = fx.subscribe(5, &info);
  fx.run();
  REQUIRE(info);
  CHECK(info->gap);
  CHECK(rec->ids == range(11, 20));
  CHECK(info->oldest_event_id == 11);
}

// A channel whose log lost its events (last_event_id says 5, the log holds none):
// the replay must end (with a gap) instead of reading the log forever.
TEST_CASE("session_channel: a replay against an empty log ends") {
  fixture fx({.ring_size = 4}, 5);
  std::optional<replay_info> info;
  auto rec = fx.subscribe(2, &info);
  fx.run_for(300ms);
  CHECK(log_reads_of(fx.db) <= 2);
  CHECK(info.has_value());
  if (info) CHECK(info->gap);
  fx.channel->close();  // stop any read loop so the fixture can shut down
  fx.run();
}

TEST_CASE("session_channel: a refused commit is retried; subscribers see each frame once") {
  fixture fx;
  auto rec = fx.subscribe(0);
  fx.db.fail_commits(1);
  fx.on_strand([&] {
    for (int i = 0; i < 3; ++i) fx.channel->publish("run-1", agw::core::event_type::token, token(i));
  });
  fx.run();
  CHECK(fx.db.failed_commits == 1);
  CHECK(rec->ids == range(1, 3));
  CHECK(rec->uncommitted_deliveries.empty());
  CHECK(fx.db.committed_event_ids(session_id) == range(1, 3));
  CHECK(fx.channel->last_committed_id() == 3);
  // The refused attempt is not a commit: one wait observed per batch released.
  CHECK(fx.stats.event_commit_wait_seconds.read().count == fx.stats.event_batches_committed);
  // The retried batch's wait runs from its oldest event's publish, across the 200 ms pause.
  CHECK(fx.stats.event_commit_wait_seconds.read().sum >= 0.2);
}

TEST_CASE("session_channel: close() closes every subscriber and refuses new ones") {
  fixture fx;
  auto a = fx.subscribe(0);
  auto b = fx.subscribe(0);
  fx.publish_one_by_one(2);
  CHECK(a->ids == range(1, 2));
  CHECK(fx.channel->subscriber_count() == 2);
  fx.on_strand([&] { fx.channel->close(); });
  fx.run();
  CHECK(fx.channel->closed());
  CHECK(fx.channel->subscriber_count() == 0);
  for (const auto& r : {a, b}) {
    REQUIRE(r->closed.size() == 1);
    CHECK(r->closed[0] == subscriber::close_reason::session_deleted);
  }
  auto late = fx.subscribe(0);
  fx.on_strand([&] { fx.channel->publish("run-1", agw::core::event_type::token, token(3)); });
  fx.run();
  REQUIRE(late->closed.size() == 1);
  CHECK(late->closed[0] == subscriber::close_reason::session_deleted);
  CHECK(late->ids.empty());
  CHECK(a->ids == range(1, 2));
  CHECK(fx.db.committed_event_ids(session_id) == range(1, 2));  // nothing is stored after close
}

TEST_CASE("session_channel: close_subscribers() drains streams but keeps the channel") {
  fixture fx;
  auto a = fx.subscribe(0);
  fx.run();
  fx.on_strand([&] { fx.channel->close_subscribers(); });
  fx.run();
  REQUIRE(a->closed.size() == 1);
  CHECK(a->closed[0] == subscriber::close_reason::draining);
  CHECK_FALSE(fx.channel->closed());
  fx.publish_one_by_one(1);
  CHECK(fx.db.committed_event_ids(session_id) == range(1, 1));
}

TEST_CASE("session_channel: unsubscribe stops delivery") {
  fixture fx;
  auto a = fx.subscribe(0);
  auto b = fx.subscribe(0);
  fx.publish_one_by_one(1);
  fx.on_strand([&] { fx.channel->unsubscribe(a.get()); });
  fx.publish_one_by_one(1);
  CHECK(a->ids == range(1, 1));
  CHECK(b->ids == range(1, 2));
  CHECK(fx.channel->subscriber_count() == 1);
}

TEST_CASE("session_channel: subscribers leaving from the front, middle and end leave the others' deliveries whole") {
  // A leaving cursor takes the last one's place (subscriber_cursors): the one moved must
  // be found there when it leaves in turn, and a second unsubscribe is a no-op.
  fixture fx;
  std::vector<std::shared_ptr<recorder>> subs;
  for (int i = 0; i < 6; ++i) subs.push_back(fx.subscribe(0));
  fx.publish_one_by_one(1);
  fx.on_strand([&] {
    fx.channel->unsubscribe(subs[0].get());  // the front: the last (5) moves in: 5 1 2 3 4
    fx.channel->unsubscribe(subs[2].get());  // the middle: 4 moves in: 5 1 4 3
    fx.channel->unsubscribe(subs[0].get());  // again: nothing
  });
  fx.publish_one_by_one(1);
  fx.on_strand([&] {
    fx.channel->unsubscribe(subs[3].get());  // the last: nothing moves: 5 1 4
    fx.channel->unsubscribe(subs[5].get());  // the one moved first, from the front: 4 1
  });
  fx.publish_one_by_one(1);
  CHECK(fx.channel->subscriber_count() == 2);
  CHECK(subs[0]->ids == range(1, 1));
  CHECK(subs[2]->ids == range(1, 1));
  CHECK(subs[5]->ids == range(1, 2));
  CHECK(subs[3]->ids == range(1, 2));
  CHECK(subs[1]->ids == range(1, 3));
  CHECK(subs[4]->ids == range(1, 3));
  // A subscriber that left may come back; one still here cannot be added twice.
  fx.on_strand([&] { fx.channel->subscribe(subs[0], 3, {}); });
  fx.publish_one_by_one(1);
  CHECK(subs[0]->ids == std::vector<std::int64_t>{1, 4});
  bool refused = false;
  fx.on_strand([&] {
    try {
      fx.channel->subscribe(subs[1], 4, {});
    } catch (const std::logic_error&) {
      refused = true;
    }
  });
  fx.run();
  CHECK(refused);
  CHECK(fx.channel->subscriber_count() == 3);
}

namespace {

// Breaks subscriber.hpp's rule: leaves its channel from inside deliver().
class leaves_while_delivered final : public subscriber {
 public:
  explicit leaves_while_delivered(session_channel& channel) : channel_(channel) {}
  void deliver(const frame_batch&) override {
    try {
      channel_.unsubscribe(this);
    } catch (const std::logic_error&) {
      ++refused;
    }
  }
  void close(close_reason) override {}
  int refused = 0;

 private:
  session_channel& channel_;
};

}  // namespace

TEST_CASE("session_channel: a subscriber that leaves from inside a delivery is refused, and the walk goes on whole") {
  fixture fx;
  auto before = fx.subscribe(0);
  auto rogue = std::make_shared<leaves_while_delivered>(*fx.channel);
  fx.on_strand([&] { fx.channel->subscribe(rogue, 0, {}); });
  auto after = fx.subscribe(0);
  fx.publish_one_by_one(2);
  CHECK(rogue->refused == 2);
  CHECK(before->ids == range(1, 2));
  CHECK(after->ids == range(1, 2));
  CHECK(fx.channel->subscriber_count() == 3);
  // Outside a walk, leaving works.
  fx.on_strand([&] { fx.channel->unsubscribe(rogue.get()); });
  fx.run();
  CHECK(fx.channel->subscriber_count() == 2);
}

namespace {

struct wait_result {
  bool done = false;
  std::int64_t committed_at_resume = -1;
  bool durable_at_resume = false;
};

net::awaitable<void> publish_and_wait(std::shared_ptr<session_channel> channel, const fake_db& db, wait_result& out) {
  for (int i = 0; i < 3; ++i) channel->publish("run-1", agw::core::event_type::token, token(i));
  co_await channel->wait_committed();
  out.done = true;
  out.committed_at_resume = channel->last_committed_id();
  out.durable_at_resume = db.event_committed(session_id, 3);
}

net::awaitable<void> just_wait(std::shared_ptr<session_channel> channel, bool& done) {
  co_await channel->wait_committed();
  done = true;
}

}  // namespace

TEST_CASE("session_channel: wait_committed completes after the commit") {
  fixture fx;
  fx.db.hold_commits();
  wait_result result;
  net::co_spawn(fx.channel->strand(), publish_and_wait(fx.channel, fx.db, result), net::detached);
  fx.run_for(100ms);
  CHECK_FALSE(result.done);
  fx.db.release_commits();
  fx.run();
  CHECK(result.done);
  CHECK(result.committed_at_resume == 3);
  CHECK(result.durable_at_resume);

  // Nothing pending: returns at once.
  bool done = false;
  net::co_spawn(fx.channel->strand(), just_wait(fx.channel, done), net::detached);
  fx.run();
  CHECK(done);
}

TEST_CASE("session_channel: close() releases a wait_committed") {
  fixture fx;
  fx.db.hold_commits();
  wait_result result;
  net::co_spawn(fx.channel->strand(), publish_and_wait(fx.channel, fx.db, result), net::detached);
  fx.run_for(50ms);
  CHECK_FALSE(result.done);
  fx.on_strand([&] { fx.channel->close(); });
  fx.run_for(50ms);
  CHECK(result.done);
  fx.db.release_commits();
  fx.run();
}

namespace {

net::awaitable<void> publish_past_watermark(std::shared_ptr<session_channel> channel, int count,
                                            std::int64_t& committed_at_resume, bool& resumed) {
  for (int i = 0; i < count; ++i) channel->publish("run-1", agw::core::event_type::token, token(i));
  co_await channel->wait_below_watermark();
  resumed = true;
  committed_at_resume = channel->last_committed_id();
}

}  // namespace

TEST_CASE("session_channel: wait_below_watermark holds the publisher until commits catch up") {
  fixture fx({.high_watermark = 3});
  fx.db.hold_commits();
  bool resumed = false;
  std::int64_t committed = -1;
  net::co_spawn(fx.channel->strand(), publish_past_watermark(fx.channel, 5, committed, resumed), net::detached);
  fx.run_for(60ms);
  CHECK_FALSE(resumed);  // 1 in flight + 4 pending >= 3
  bool above = false;
  fx.on_strand([&] { above = fx.channel->above_watermark(); });
  fx.run_for(10ms);
  CHECK(above);  // what a run asks before it waits
  fx.db.release_commits();
  fx.run();
  CHECK(resumed);
  fx.on_strand([&] { above = fx.channel->above_watermark(); });
  fx.run();
  CHECK_FALSE(above);
  CHECK(committed >= 1);
  CHECK(fx.channel->last_committed_id() == 5);

  // At the watermark exactly (1 in flight + 2 pending = 3) it waits; one fewer, not; and a
  // closed channel never does.
  fx.db.hold_commits();
  std::vector<bool> at;
  fx.on_strand([&] {
    for (int i = 0; i < 3; ++i) {
      fx.channel->publish("run-1", agw::core::event_type::token, token(6 + i));
      at.push_back(fx.channel->above_watermark());
    }
  });
  fx.run_for(10ms);
  CHECK(at == std::vector<bool>{false, false, true});
  fx.on_strand([&] {
    fx.channel->close();
    above = fx.channel->above_watermark();
  });
  fx.run_for(10ms);
  CHECK_FALSE(above);
  fx.db.release_commits();
  fx.run();
}

TEST_CASE("session_channel: below the watermark, wait_below_watermark does not wait") {
  fixture fx({.high_watermark = 3});
  // Below the watermark: no wait at all.
  bool again = false;
  std::int64_t ignored = 0;
  net::co_spawn(fx.channel->strand(), publish_past_watermark(fx.channel, 1, ignored, again), net::detached);
  fx.run();
  CHECK(again);
}

TEST_CASE("session_channel: releases are spaced by what they cost the subscribers: fewer, larger batches, every frame once") {
  // 15 ms per subscriber, two subscribers: sends at least 30 ms apart while a run
  // publishes one event every 2 ms. Unspaced, nearly every event would be a batch of
  // its own (the fake writer commits each at once).
  fixture fx({.release_spacing_per_subscriber = 15ms});
  auto a = fx.subscribe(0);
  auto b = fx.subscribe(0);
  fx.run();
  const auto start = std::chrono::steady_clock::now();
  net::co_spawn(fx.channel->strand(), publish_slowly(fx.channel, 40, 2ms), net::detached);
  fx.run();
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(a->ids == range(1, 40));
  CHECK(b->ids == range(1, 40));
  CHECK(a->uncommitted_deliveries.empty());
  // The first send, then at most one per 30 ms of the time it all took (a slow machine
  // stretches that time, never the count per 30 ms).
  CHECK(a->batches <= 2 + took / 30ms);
  CHECK(a->batches < 20);
  CHECK(fx.db.committed().event_batches.at(session_id).size() == static_cast<std::size_t>(a->batches));
}

TEST_CASE("session_channel: release spacing holds a batch only after a send, and never a whole batch") {
  // A spacing of 2 s: the first event goes at once (nothing was sent before it); of
  // what follows within the spacing, a whole batch goes at once too, and the rest waits
  // for the spacing's timer.
  fixture fx({.max_batch = 4, .release_spacing_per_subscriber = 2s});
  auto rec = fx.subscribe(0);
  fx.run();
  fx.on_strand([&] { fx.channel->publish("run-1", agw::core::event_type::token, token(1)); });
  fx.run_for(300ms);
  CHECK(rec->ids == range(1, 1));
  fx.on_strand([&] {
    for (int i = 2; i <= 7; ++i) fx.channel->publish("run-1", agw::core::event_type::token, token(i));
  });
  fx.run_for(300ms);
  CHECK(rec->ids == range(1, 5));  // 2..5: a whole batch of 4; 6 and 7 wait
  fx.run();                        // the spacing's timer sends them
  CHECK(rec->ids == range(1, 7));
  CHECK(rec->batches == 3);
}

TEST_CASE("session_channel: an idle channel releases its ring and serves a resume from the log") {
  fixture fx({.ring_size = 10});
  fx.publish_one_by_one(6);  // nobody subscribed, no run: the ring is let go after each commit
  std::optional<replay_info> info;
  auto rec = fx.subscribe(2, &info);
  fx.run();
  CHECK(rec->ids == range(3, 6));
  REQUIRE(info);
  CHECK(info->replayed == 4);
  CHECK_FALSE(info->gap);
  CHECK(log_reads_of(fx.db) == 1);
}

TEST_CASE("session_channel: read_after serves memory, the log, or both, up to a limit") {
  struct row {
    std::int64_t after;
    std::size_t limit;
    std::vector<std::int64_t> ids;
    bool reads_log;
  };
  // The log holds 1..14 (how is the store's business), the ring 13..14.
  const row rows[] = {
      {0, 100, range(1, 14), true},   {0, 3, range(1, 3), true}, {8, 100, range(9, 14), true}, {8, 4, range(9, 12), true},
      {10, 100, range(11, 14), true}, {12, 1, {13}, false},      {14, 100, {}, false},         {20, 100, {}, false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.after);
    CAPTURE(r.limit);
    fixture fx({.ring_size = 2});
    auto keeper = fx.keep_ring();  // an idle channel would let its ring go
    fx.publish_one_by_one(14);
    std::vector<std::int64_t> got;
    net::co_spawn(
        fx.channel->strand(),
        [&]() -> net::awaitable<void> {
          for (const auto& f : co_await fx.channel->read_after(r.after, r.limit)) got.push_back(f->id);
        },
        net::detached);
    fx.run();
    CHECK(got == r.ids);
    CHECK((log_reads_of(fx.db) > 0) == r.reads_log);
  }
}

namespace {

// A subscriber that takes nothing until told to: its backlog is everything delivered
// since the last take(), and when_drained() waits for the next take().
class slow_reader final : public subscriber {
 public:
  void deliver(const frame_batch& frames) override {
    for (const auto& f : frames->frames) held_.push_back(f->id);
    max_held = std::max(max_held, held_.size());
  }
  std::size_t backlog() const override { return held_.size(); }
  void when_drained(std::function<void()> drained) override {
    if (held_.empty()) return drained();
    drained_ = std::move(drained);
  }
  void close(close_reason why) override {
    closed = true;
    reason = why;
  }
  // Takes what is held, like a socket write completing; true when the channel was waiting.
  bool take() {
    ids.insert(ids.end(), held_.begin(), held_.end());
    held_.clear();
    if (!drained_) return false;
    std::exchange(drained_, nullptr)();
    return true;
  }

  std::vector<std::int64_t> ids;
  std::size_t max_held = 0;
  bool closed = false;
  close_reason reason = close_reason::draining;

 private:
  std::vector<std::int64_t> held_;
  std::function<void()> drained_;
};

}  // namespace

TEST_CASE("session_channel: a subscriber over its backlog bound catches up page by page, from memory and the log") {
  fixture fx({.ring_size = 8, .replay_page = 16, .subscriber_backlog = 32});
  auto slow = std::make_shared<slow_reader>();
  auto fast = fx.subscribe(0);
  fx.on_strand([&] { fx.channel->subscribe(slow, 0); });
  fx.run();
  // 500 events while the slow one takes nothing: it stops receiving past its bound ...
  fx.on_strand([&] {
    for (int i = 0; i < 500; ++i) fx.channel->publish("run-1", agw::core::event_type::token, token(i + 1));
  });
  fx.run();
  CHECK(fast->ids == range(1, 500));
  CHECK(fx.stats.sse_subscribers_behind == 1);
  CHECK(slow->max_held <= 32 + 256);  // the bound, plus the batch that crossed it
  // ... and each time it has taken what it holds, it gets the next page, at most a page.
  int pages = 0;
  slow->max_held = 0;
  while (slow->take()) {
    fx.run();
    ++pages;
    REQUIRE(pages < 1000);
  }
  CHECK(slow->ids == range(1, 500));
  CHECK(slow->max_held <= 16);
  CHECK(pages > 500 / 16 - 20);  // paged from the log, not handed the backlog at once
  CHECK(log_reads_of(fx.db) > 0);
  // Caught up, it is live again: the next events reach it as they commit.
  fx.on_strand([&] { fx.channel->publish("run-1", agw::core::event_type::token, token(501)); });
  fx.run();
  slow->take();
  CHECK(slow->ids == range(1, 501));
  CHECK(fast->ids == range(1, 501));
  CHECK_FALSE(slow->closed);
}

TEST_CASE("session_channel: a lagging subscriber that leaves stops its catch-up") {
  fixture fx({.ring_size = 4, .replay_page = 8, .subscriber_backlog = 8});
  fx.publish_one_by_one(40);
  auto slow = std::make_shared<slow_reader>();
  fx.on_strand([&] { fx.channel->subscribe(slow, 0); });
  fx.run();
  CHECK(slow->backlog() == 8);  // the first page from the log
  const int reads = log_reads_of(fx.db);
  fx.on_strand([&] { fx.channel->unsubscribe(slow.get()); });
  fx.run();
  slow->take();
  fx.run();
  CHECK(log_reads_of(fx.db) == reads);
  CHECK(slow->ids == range(1, 8));
  CHECK(fx.channel->subscriber_count() == 0);
}

TEST_CASE("session_channel: a lagging subscriber whose unsent events retention removed is cut, never left to skip them") {
  fixture fx({.ring_size = 8, .replay_page = 16, .subscriber_backlog = 32, .retention = 50});
  auto slow = std::make_shared<slow_reader>();
  fx.on_strand([&] { fx.channel->subscribe(slow, 0); });
  fx.run();
  fx.on_strand([&] {
    for (int i = 0; i < 500; ++i) fx.channel->publish("run-1", agw::core::event_type::token, token(i + 1));
  });
  fx.run();
  // The log now holds only the newest 50: once the slow one drains, its next page would jump.
  int pages = 0;
  while (slow->take()) {
    fx.run();
    REQUIRE(++pages < 100);
  }
  REQUIRE(slow->closed);
  CHECK(slow->reason == subscriber::close_reason::broken);
  CHECK(strictly_increasing(slow->ids));
  CHECK(slow->ids == range(1, static_cast<std::int64_t>(slow->ids.size())));  // what it got has no hole
  CHECK(fx.channel->subscriber_count() == 0);
  // Its resume is told: gap, and the oldest id still held.
  std::optional<replay_info> info;
  auto again = fx.subscribe(slow->ids.empty() ? 0 : slow->ids.back(), &info);
  fx.run();
  REQUIRE(info);
  CHECK(info->gap);
  CHECK(info->oldest_event_id == 451);
  CHECK(again->ids == range(451, 500));
}

TEST_CASE("session_channel: a subscriber whose catch-up cannot read the log is cut as broken") {
  fixture fx({.ring_size = 4});
  fx.publish_one_by_one(20);
  fx.db.fail_reads = true;
  auto slow = std::make_shared<slow_reader>();
  fx.on_strand([&] { fx.channel->subscribe(slow, 0); });
  fx.run();
  CHECK(slow->closed);
  CHECK(slow->reason == subscriber::close_reason::broken);
  CHECK(fx.channel->subscriber_count() == 0);
  fx.db.fail_reads = false;
}

// Two nodes on one database: `fx.channel` writes the session's events, `other` is the
// same session's channel on another node, told of the commits as the fan-out would.
namespace {
std::shared_ptr<session_channel> second_channel(fixture& fx, session_channel::options opts = {}) {
  return std::make_shared<session_channel>(fx.io.get_executor(), session_id, 0, fx.services, opts);
}
// The committed events after `after_id`, as the fan-out would carry them.
std::vector<agw::core::frame_ptr> log_frames(fixture& fx, std::int64_t after_id) {
  std::vector<agw::core::frame_ptr> out;
  const auto data = fx.db.committed();
  for (const auto& b : data.event_batches.at(session_id))
    for (auto& f : agw::core::decode_log_frames(b.frames, b.first_id))
      if (f->id > after_id) out.push_back(std::move(f));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->id < b->id; });
  return out;
}
}  // namespace

TEST_CASE("session_channel: follow_log with the frames delivers them like a local commit, then the node writes on") {
  fixture fx;
  auto other = second_channel(fx);
  auto rec = std::make_shared<recorder>(fx.db);
  net::post(other->strand(), [&] { other->subscribe(rec, 0); });
  fx.publish_one_by_one(5);
  const auto frames = log_frames(fx, 0);
  REQUIRE(frames.size() == 5);
  bool moved = false;
  net::post(other->strand(), [&] { moved = other->follow_log(5, frames); });
  fx.run();
  CHECK(moved);
  CHECK(rec->ids == range(1, 5));
  CHECK(other->last_committed_id() == 5);
  CHECK(other->snapshot().last_event_id == 5);
  CHECK(log_reads_of(fx.db) == 0);  // the frames came with the news: no log read
  CHECK(fx.stats.events_followed == 5);
  // The same batch again (a late duplicate): nothing moves, nothing is sent twice.
  net::post(other->strand(), [&] { moved = other->follow_log(5, frames); });
  fx.run();
  CHECK_FALSE(moved);
  // A run on this node numbers on from the followed events.
  net::post(other->strand(), [&] { other->publish("run-2", agw::core::event_type::token, token(6)); });
  fx.run();
  CHECK(rec->ids == range(1, 6));
  CHECK(fx.db.committed_event_ids(session_id) == range(1, 6));
}

TEST_CASE("session_channel: follow_log without the frames, or with a hole, has the subscribers read the gap from the log") {
  for (const bool partial : {false, true}) {
    CAPTURE(partial);
    fixture fx({.ring_size = 4});
    auto other = second_channel(fx, {.ring_size = 4, .replay_page = 3});
    auto rec = std::make_shared<recorder>(fx.db);
    net::post(other->strand(), [&] { other->subscribe(rec, 0); });
    fx.publish_one_by_one(2);
    net::post(other->strand(), [&] { other->follow_log(2, log_frames(fx, 0)); });
    fx.run();
    REQUIRE(rec->ids == range(1, 2));
    // The fan-out lost 3..9: the next message carries only 10, or nothing at all.
    fx.publish_one_by_one(8);
    auto frames = log_frames(fx, 9);
    REQUIRE(frames.size() == 1);
    if (!partial) frames.clear();
    net::post(other->strand(), [&] { other->follow_log(10, frames); });
    fx.run();
    CHECK(rec->ids == range(1, 10));
    CHECK(other->last_committed_id() == 10);
    // Then live again: the next followed batch is delivered as it comes.
    fx.publish_one_by_one(1);
    net::post(other->strand(), [&] { other->follow_log(11, log_frames(fx, 10)); });
    fx.run();
    CHECK(rec->ids == range(1, 11));
  }
}

TEST_CASE("session_channel: follow_log is ignored while the channel has events of its own on their way") {
  fixture fx;
  auto rec = fx.subscribe(0);
  fx.run();
  fx.db.hold_commits();
  bool moved = true;
  fx.on_strand([&] {
    fx.channel->publish("run-1", agw::core::event_type::token, token(1));
    moved = fx.channel->follow_log(7);
  });
  fx.run_for(100ms);
  CHECK_FALSE(moved);
  fx.db.release_commits();
  fx.run();
  CHECK(rec->ids == range(1, 1));
  CHECK(fx.channel->last_committed_id() == 1);
}
