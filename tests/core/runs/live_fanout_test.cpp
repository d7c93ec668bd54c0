// The cluster's live fan-out as core sees it (core/storage/live_fanout.hpp): two
// nodes' hubs on one store, an in-process fan-out between them, and the followers'
// log poll (core/runs/log_follower.hpp).
#include "core/storage/live_fanout.hpp"

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/events/log_codec.hpp"
#include "core/runs/log_follower.hpp"
#include "core/runs/run.hpp"
#include "core/session_hub.hpp"
#include "core/tools/tool_registry.hpp"
#include "tests/support/fake_event_writer.hpp"
#include "tests/support/fake_store.hpp"

namespace {

namespace net = boost::asio;
using agw::core::event_type;
using agw::core::frame_ptr;

constexpr const char* sid = "s1";
const agw::core::real_clock wall_clock;

class recorder final : public agw::core::subscriber {
 public:
  void deliver(const agw::core::frame_batch& frames) override {
    for (const auto& f : frames->frames) ids.push_back(f->id);
  }
  void close(close_reason why) override { closed.push_back(why); }
  std::vector<std::int64_t> ids;
  std::vector<close_reason> closed;
};

std::vector<std::int64_t> range(std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = first; i <= last; ++i) out.push_back(i);
  return out;
}

// Hands each published batch to the peer node's hub at once, as Redis would (in order),
// unless told to drop it.
class in_process_fanout final : public agw::core::live_fanout {
 public:
  void publish(std::string_view session_id, std::int64_t last_id, std::span<const frame_ptr> frames) override {
    published.push_back(last_id);
    if (drop.contains(last_id)) return;
    std::vector<frame_ptr> copy;
    if (!empty_messages) copy.assign(frames.begin(), frames.end());
    if (peer) peer->committed_elsewhere(std::string(session_id), last_id, std::move(copy));
  }
  void start(agw::core::live_fanout_receiver&, agw::core::metrics&) override {}
  void stop() override {}
  bool live() const override { return is_live; }

  agw::core::live_fanout_receiver* peer = nullptr;
  std::set<std::int64_t> drop;  // batches (by last id) lost in flight
  bool empty_messages = false;  // carry only the log's new end
  bool is_live = true;
  std::vector<std::int64_t> published;
};

int log_reads_of(const agw::test::fake_db& db) {
  int reads = 0;
  for (const auto& c : db.calls()) reads += c.ends_with(":events_after");
  return reads;
}

struct node {
  node(net::io_context& io, agw::core::store_executor& store, agw::test::fake_event_writer& writer)
      : hub(io.get_executor(), store, writer, stats, config, runner) {
    hub.use_fanout(fanout);
  }
  agw::core::metrics stats;
  agw::core::settings config;
  agw::core::tool_registry tools = agw::core::make_builtin_tools();
  agw::core::tool_runner runner{tools, 1, config.tool_timeout};
  in_process_fanout fanout;
  agw::core::session_hub hub;
};

struct two_nodes {
  two_nodes() {
    a.fanout.peer = &b.hub;
    b.fanout.peer = &a.hub;
    // The session's row: its last_event_id is what a node asks the store when a message
    // says only that the log grew (session_channel::follow_news).
    db.seed([](agw::test::fake_data& d) {
      agw::core::session_record s;
      s.id = sid;
      s.thread_id = sid;
      d.sessions[sid] = s;
      d.session_rowids[sid] = d.next_rowid++;
    });
  }
  ~two_nodes() {
    settle();
    store.stop();
  }
  void settle() {
    io.restart();
    io.run();
  }
  std::shared_ptr<recorder> follow_on_b(std::int64_t after = 0) {
    auto c = b.hub.channel(sid, 0);
    auto rec = std::make_shared<recorder>();
    net::post(c->strand(), [c, rec, after] { c->subscribe(rec, after); });
    settle();
    return rec;
  }
  // A run on node A publishes `count` tokens, each committed before the next.
  void write_on_a(int count) {
    auto c = a.hub.channel(sid, 0);
    for (int i = 0; i < count; ++i) {
      net::post(c->strand(), [c] { c->publish("run-a", event_type::token, boost::json::object{{"content", "x"}}); });
      settle();
    }
  }
  void poll_b() {
    auto follower = std::make_shared<agw::core::log_follower>(io.get_executor(), b.hub, b.fanout, b.stats,
                                                              agw::core::log_follower::options{});
    follower->poll_once();
    settle();
  }

  agw::test::fake_db db;
  net::io_context io;
  agw::core::store_executor store{db.factory(), {.readers = 1}};
  agw::test::fake_event_writer writer{store};
  node a{io, store, writer};
  node b{io, store, writer};
};

}  // namespace

TEST_CASE("live fan-out: what node A commits reaches node B's subscribers in order, exactly once, without a log read") {
  two_nodes n;
  auto rec = n.follow_on_b();
  const int reads_before = log_reads_of(n.db);
  n.write_on_a(20);
  CHECK(rec->ids == range(1, 20));
  CHECK(n.a.fanout.published == range(1, 20));
  CHECK(log_reads_of(n.db) == reads_before);
  CHECK(n.b.stats.events_followed == 20);
  CHECK(n.b.hub.find(sid)->last_committed_id() == 20);
  // A's own subscriber is not told twice by B's echo (B publishes nothing it only followed).
  CHECK(n.b.fanout.published.empty());
  // Then node B writes the session (the next run): ids number on, and A follows.
  auto on_a = std::make_shared<recorder>();
  auto ca = n.a.hub.channel(sid, 0);
  net::post(ca->strand(), [ca, on_a] { ca->subscribe(on_a, 20); });
  auto cb = n.b.hub.channel(sid, 0);
  net::post(cb->strand(), [cb] { cb->publish("run-b", event_type::token, boost::json::object{{"content", "y"}}); });
  n.settle();
  CHECK(rec->ids == range(1, 21));
  CHECK(on_a->ids == range(21, 21));
  CHECK(n.db.committed_event_ids(sid) == range(1, 21));
}

TEST_CASE("live fan-out: a message lost in flight is filled from the log by the next one") {
  two_nodes n;
  auto rec = n.follow_on_b();
  n.a.fanout.drop = {3, 4};
  n.write_on_a(6);
  CHECK(rec->ids == range(1, 6));
  CHECK(log_reads_of(n.db) >= 1);
}

TEST_CASE("live fan-out: messages that carry only the log's end have the followers read the events") {
  two_nodes n;
  auto rec = n.follow_on_b();
  n.a.fanout.empty_messages = true;
  n.write_on_a(5);
  CHECK(rec->ids == range(1, 5));
}

TEST_CASE("live fan-out: the last messages lost are filled by the followers' log poll") {
  two_nodes n;
  auto rec = n.follow_on_b();
  n.a.fanout.drop = {4, 5};
  n.write_on_a(5);
  CHECK(rec->ids == range(1, 3));
  n.poll_b();
  CHECK(rec->ids == range(1, 5));
  CHECK(n.b.stats.fanout_log_polls == 1);
  // Nothing new: the poll reads, finds nothing and sends nothing twice.
  n.poll_b();
  CHECK(rec->ids == range(1, 5));
  // Redis down altogether: only the poll carries the events.
  n.a.fanout.peer = nullptr;
  n.write_on_a(3);
  CHECK(rec->ids == range(1, 5));
  n.poll_b();
  CHECK(rec->ids == range(1, 8));
}

TEST_CASE("live fan-out: the poll skips channels with nobody to serve and the channel writing the session") {
  two_nodes n;
  n.b.hub.channel(sid, 0);  // a channel with no subscriber
  n.write_on_a(2);
  n.poll_b();
  CHECK(n.b.stats.fanout_log_polls == 0);
  // Node A's channel has a live run: A's follower never reads what A writes.
  auto ca = n.a.hub.channel(sid, 0);
  auto keep = std::make_shared<recorder>();
  auto r = std::make_shared<agw::core::run>(ca->strand(), wall_clock, "run-a", 0, ca->last_assigned_id());
  net::post(ca->strand(), [ca, keep, r] {
    ca->subscribe(keep, 2);
    ca->set_live_run(r);
  });
  n.settle();
  auto follower = std::make_shared<agw::core::log_follower>(n.io.get_executor(), n.a.hub, n.a.fanout, n.a.stats,
                                                            agw::core::log_follower::options{});
  follower->poll_once();
  n.settle();
  CHECK(n.a.stats.fanout_log_polls == 0);
  net::post(ca->strand(), [ca] { ca->set_live_run(nullptr); });
  n.settle();
}

TEST_CASE("live fan-out: the events of a session being deleted are not published") {
  two_nodes n;
  n.write_on_a(2);
  auto ca = n.a.hub.channel(sid, 0);
  auto r = std::make_shared<agw::core::run>(ca->strand(), wall_clock, "run-a", 0, ca->last_assigned_id());
  net::post(ca->strand(), [ca, r] { ca->set_live_run(r); });
  n.settle();
  net::post(ca->strand(), [ca] { ca->close(); });  // aborts the run; its last events go out unstored
  net::post(ca->strand(), [ca, r] { ca->publish(r->id(), event_type::done, boost::json::object{}); });
  n.settle();
  CHECK(n.a.fanout.published == range(1, 2));
}

TEST_CASE("live fan-out: a client resuming on a node that has not taken on the events it saw gets each one once") {
  two_nodes n;
  n.b.hub.channel(sid, 0);
  n.write_on_a(2);  // B's channel follows to 2
  n.a.fanout.drop = {3, 4, 5};
  n.write_on_a(3);  // B's channel does not hear of 3..5
  // The client saw 1..4 on node A and resumes on node B.
  auto rec = n.follow_on_b(4);
  CHECK(rec->ids.empty());
  // The late message for 3..5 reaches B: only 5 is new to this client.
  std::vector<frame_ptr> late;
  const auto data = n.db.committed();
  for (const auto& batch : data.event_batches.at(sid))
    for (auto& f : agw::core::decode_log_frames(batch.frames, batch.first_id))
      if (f->id >= 3) late.push_back(std::move(f));
  n.b.hub.committed_elsewhere(sid, 5, late);
  n.settle();
  CHECK(rec->ids == range(5, 5));
  n.write_on_a(1);
  CHECK(rec->ids == range(5, 6));
  // Or the message is lost as well: the next one (not following on) has it read the log.
  auto rec2 = n.follow_on_b(6);
  n.a.fanout.drop = {7};
  n.write_on_a(2);
  CHECK(rec->ids == range(5, 8));
  CHECK(rec2->ids == range(7, 8));
}

TEST_CASE("live fan-out: a single node's channels hold none, and the null fan-out does nothing") {
  agw::core::null_live_fanout none;
  none.publish(sid, 3, {});
  CHECK_FALSE(none.live());
  agw::test::fake_db db;
  net::io_context io;
  agw::core::metrics stats;
  agw::core::store_executor store{db.factory(), {.readers = 1}};
  agw::test::fake_event_writer writer{store};
  agw::core::channel_services services{store, writer, stats};
  CHECK(services.fanout == nullptr);
  auto c =
      std::make_shared<agw::core::session_channel>(io.get_executor(), sid, 0, services, agw::core::session_channel::options{});
  net::post(c->strand(), [c] { c->publish("run-1", event_type::token, boost::json::object{{"content", "x"}}); });
  io.run();
  CHECK(c->last_committed_id() == 1);
  c.reset();
  store.stop();
}
