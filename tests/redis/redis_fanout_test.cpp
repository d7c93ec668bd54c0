// persistence/redis/redis_fanout against a real redis-server (tests/support/redis_server.hpp):
// the round trip between two processes' adapters, and a Redis killed and started again.
#include "persistence/redis/redis_fanout.hpp"

#include <doctest/doctest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/events/sse_format.hpp"
#include "tests/support/redis_server.hpp"

namespace {

using namespace std::chrono_literals;
using agw::persistence::redis::redis_fanout;

struct heard {
  std::string session_id;
  std::int64_t last_id = 0;
  std::vector<agw::core::frame_ptr> frames;
};

class recording_receiver final : public agw::core::live_fanout_receiver {
 public:
  void committed_elsewhere(const std::string& session_id, std::int64_t last_id,
                           std::vector<agw::core::frame_ptr> frames) override {
    std::lock_guard lock(mutex_);
    heard_.push_back({session_id, last_id, std::move(frames)});
  }
  std::vector<heard> taken() {
    std::lock_guard lock(mutex_);
    return heard_;
  }

 private:
  std::mutex mutex_;
  std::vector<heard> heard_;
};

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds within = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

std::vector<agw::core::frame_ptr> tokens(std::int64_t first, std::int64_t last) {
  std::vector<agw::core::frame_ptr> out;
  for (std::int64_t id = first; id <= last; ++id)
    out.push_back(std::make_shared<const agw::core::event_frame>(
        agw::core::make_event_frame(id, agw::core::event_type::token, "run-1", "content", "t" + std::to_string(id))));
  return out;
}

redis_fanout::options quick() {
  redis_fanout::options o;
  o.live_after = 200ms;
  o.backoff_max = 400ms;
  return o;
}

// One process's adapter, started on its own receiver and metrics (declared first, so
// they outlive the adapter's threads).
struct node {
  explicit node(const std::string& url) : fanout(url, quick()) { fanout.start(heard, stats); }
  agw::core::metrics stats;
  recording_receiver heard;
  redis_fanout fanout;
};

}  // namespace

TEST_CASE("redis_fanout: parse_redis_url") {
  auto a = agw::persistence::redis::parse_redis_url("redis://127.0.0.1:6380");
  CHECK(a.host == "127.0.0.1");
  CHECK(a.port == 6380);
  CHECK(agw::persistence::redis::parse_redis_url("redis://localhost").port == 6379);
  CHECK_THROWS(agw::persistence::redis::parse_redis_url("http://127.0.0.1:6379"));
  CHECK_THROWS(agw::persistence::redis::parse_redis_url("redis://u:p@127.0.0.1"));
}

TEST_CASE("redis_fanout: a batch published by one node reaches the other, not itself") {
  agw::test::redis_server redis;
  node a(redis.url());
  node b(redis.url());
  REQUIRE(eventually([&] { return a.fanout.live() && b.fanout.live(); }));
  CHECK(a.stats.fanout_connected == 1);

  const auto frames = tokens(4, 6);
  a.fanout.publish("s1", 6, frames);
  a.fanout.publish("s2", 9, {});  // the log's new end only
  REQUIRE(eventually([&] { return b.heard.taken().size() == 2; }));
  const auto got = b.heard.taken();
  CHECK(got[0].session_id == "s1");
  CHECK(got[0].last_id == 6);
  REQUIRE(got[0].frames.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(got[0].frames[i]->id == frames[i]->id);
    CHECK(got[0].frames[i]->sse == frames[i]->sse);
    CHECK(got[0].frames[i]->type == frames[i]->type);
  }
  CHECK(got[1].session_id == "s2");
  CHECK(got[1].last_id == 9);
  CHECK(got[1].frames.empty());
  std::this_thread::sleep_for(100ms);
  CHECK(a.heard.taken().empty());  // its own messages are skipped
  CHECK(a.stats.fanout_published == 2);
  CHECK(b.stats.fanout_received == 2);
  CHECK(a.stats.fanout_dropped == 0);

  // Many batches in a burst arrive in order.
  for (std::int64_t id = 10; id < 1010; ++id) a.fanout.publish("s3", id, tokens(id, id));
  REQUIRE(eventually([&] { return b.heard.taken().size() == 1002; }));
  const auto burst = b.heard.taken();
  for (std::size_t i = 2; i < burst.size(); ++i) CHECK(burst[i].last_id == static_cast<std::int64_t>(i) + 8);
  a.fanout.stop();
  b.fanout.stop();
  CHECK(a.stats.fanout_connected == 0);
}

TEST_CASE("redis_fanout: Redis killed, then started again: the adapter is not live meanwhile and reconnects") {
  agw::test::redis_server redis;
  node a(redis.url());
  node b(redis.url());
  REQUIRE(eventually([&] { return a.fanout.live() && b.fanout.live(); }));

  redis.stop();
  CHECK(eventually([&] { return !b.fanout.subscribed() && !b.fanout.live(); }, 5s));
  CHECK(b.stats.fanout_connected == 0);
  // Publishing meanwhile drops (the followers read the log); it never blocks the caller.
  const auto before = std::chrono::steady_clock::now();
  for (std::int64_t id = 1; id <= 50; ++id) a.fanout.publish("s1", id, tokens(id, id));
  CHECK(std::chrono::steady_clock::now() - before < 100ms);
  CHECK(eventually([&] { return a.stats.fanout_dropped == 50; }, 5s));

  redis.start();
  CHECK(eventually([&] { return a.fanout.live() && b.fanout.live(); }, 10s));
  CHECK(b.stats.fanout_reconnects >= 1);
  CHECK(b.stats.fanout_connected == 1);
  // The publisher reconnects on its next batch (its backoff has passed by now).
  REQUIRE(eventually(
      [&] {
        a.fanout.publish("s1", 51, tokens(51, 51));
        std::this_thread::sleep_for(50ms);
        return !b.heard.taken().empty();
      },
      10s));
  CHECK(b.heard.taken().front().last_id == 51);
  a.fanout.stop();
  b.fanout.stop();
}

namespace {

// PUBLISH through a plain RESP request, as any client on the same Redis could send it.
void publish_raw(std::uint16_t port, const std::string& channel, const std::string& payload) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  auto bulk = [](const std::string& s) { return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n"; };
  const std::string request = "*3\r\n" + bulk("PUBLISH") + bulk(channel) + bulk(payload);
  boost::asio::write(socket, boost::asio::buffer(request));
  boost::asio::streambuf reply;
  boost::asio::read_until(socket, reply, "\r\n");  // ":<receivers>"
}

}  // namespace

TEST_CASE("redis_fanout: malformed messages on the channels are skipped, an undecodable body is news without frames") {
  agw::test::redis_server redis;
  node b(redis.url());
  REQUIRE(eventually([&] { return b.fanout.live(); }));

  const std::string prefix(redis_fanout::channel_prefix);
  publish_raw(redis.port(), prefix + "s1", "no head line");
  publish_raw(redis.port(), prefix + "s1", "node-x 4\n");         // no last id
  publish_raw(redis.port(), prefix + "s1", "node-x four six\n");  // not numbers
  publish_raw(redis.port(), prefix + "s1", "node-x 4 -3\n");      // no event has id -3
  publish_raw(redis.port(), "elsewhere:s1", "node-x 4 6\n");      // not a session channel (the pattern skips it)
  publish_raw(redis.port(), prefix + "s2", "node-x 4 6\nnot a log row");
  publish_raw(redis.port(), prefix + "s3", "node-x 7 7\nftoken {\"run_id\":");  // cut short
  publish_raw(redis.port(), prefix + "s5", "node-x 8 8\nxyz\n");                // a whole line, but no kind of record
  publish_raw(redis.port(), prefix + "s4", "node-x 9 9\n");

  REQUIRE(eventually([&] { return b.heard.taken().size() == 4; }));
  std::this_thread::sleep_for(200ms);
  const auto got = b.heard.taken();
  // The undecodable bodies arrive as news without frames, then the empty one, in order:
  // the log decides what an undecodable message meant (session_channel::follow_news).
  const std::vector<std::pair<std::string, std::int64_t>> expected{{"s2", 6}, {"s3", 7}, {"s5", 8}, {"s4", 9}};
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].session_id == expected[i].first);
    CHECK(got[i].last_id == expected[i].second);
    CHECK(got[i].frames.empty());
  }
  CHECK(b.stats.fanout_received == 4);
  CHECK(b.fanout.live());
  b.fanout.stop();
}
