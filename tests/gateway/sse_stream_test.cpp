// The SSE stream's write loop, byte for byte, against Beast's in-memory test::stream:
// its writes complete at once (copied into the peer's input area), so each poll of
// the io_context runs the loop to the next idle point and the bytes are exact. A
// fail_count fails the n-th write. Beast 1.81's test::stream cannot block a write
// (its peer's buffer grows without bound; write_size only splits writes), so the
// stalled write is tested on a real loopback socket pair whose peer never reads.
#include "gateway/sse_stream.hpp"

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <chrono>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/events/sse_format.hpp"
#include "gateway/sse_stream_impl.ipp"
#include "tests/support/manual_clock.hpp"

// The loop over the in-memory stream, compiled here only (the library has the tcp one).
template class agw::gateway::basic_sse_stream<boost::beast::test::stream>;

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
using namespace std::chrono_literals;
using agw::core::event_type;
using agw::core::frame_batch;
using agw::core::frame_ptr;
using agw::core::subscriber;
using agw::gateway::basic_sse_stream;
using agw::gateway::heartbeat_wheel;
using agw::gateway::sse_end_reason;
using agw::gateway::sse_stream_options;
using test_stream = beast::test::stream;
using test_sse_stream = basic_sse_stream<test_stream>;

const std::string head_11 = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
const std::string head_10 = "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n";
const std::string preamble = agw::core::retry_line(1500ms);  // "retry: 1500\n"
constexpr std::string_view last_chunk = "0\r\n\r\n";

frame_ptr token(std::int64_t id, std::string_view run = "r1", std::string_view text = "t") {
  return std::make_shared<const agw::core::event_frame>(agw::core::make_event_frame(id, event_type::token, run, "content", text));
}
frame_ptr done(std::int64_t id, std::string_view run = "r1") {
  return std::make_shared<const agw::core::event_frame>(
      agw::core::make_event_frame(id, event_type::done, run, "status", "completed"));
}
frame_batch batch(std::initializer_list<frame_ptr> frames) { return agw::core::make_frame_batch(std::vector<frame_ptr>(frames)); }

// The SSE text of the frames, end to end.
std::string text(std::initializer_list<frame_ptr> frames) {
  std::string out;
  for (const auto& f : frames) out += f->sse;
  return out;
}

// One chunk of the chunked coding: "<hex size>\r\n<data>\r\n".
std::string chunk(const std::string& data) {
  char size[20];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return std::string(size, static_cast<std::size_t>(n)) + data + "\r\n";
}

sse_stream_options options_with(std::int64_t after_id = 0) {
  sse_stream_options opts;
  opts.heartbeat = 10s;  // no heartbeat unless a test asks for one
  opts.write_timeout = 10s;
  opts.after_id = after_id;
  return opts;
}

// One stream over a connected pair of test streams: the stream writes into `ours`,
// whose bytes arrive in `peer`'s input area (never read, so it holds everything).
// Single-threaded: the test polls the io_context.
struct harness {
  struct ended {
    sse_end_reason why;
    bool reusable;
  };

  explicit harness(sse_stream_options opts, std::size_t fail_at = 0) {
    if (fail_at > 0) fails.emplace(fail_at);
    stream = std::make_shared<test_sse_stream>(io.get_executor(), stats, wheel, std::move(opts));
  }
  ~harness() {
    // Ends a stream a test left open, so no handler outlives the objects it names.
    if (started && ends.empty()) {
      stream->close(subscriber::close_reason::session_deleted);
      io.poll();
    }
  }

  void start(bool chunked = true) {
    test_stream ours = fails ? test_stream(io, *fails) : test_stream(io);
    if (write_limit > 0) ours.write_size(write_limit);
    ours.connect(peer);
    started = true;
    stream->start(std::move(ours), chunked ? head_11 : head_10, preamble, chunked,
                  [this](const std::shared_ptr<test_sse_stream>& self, sse_end_reason why, test_stream socket, bool reusable) {
                    CHECK(self == stream);
                    ends.push_back({why, reusable});
                    returned.emplace(std::move(socket));
                  });
  }

  // The bytes the peer received since the last call.
  std::string fresh() {
    const std::string all(peer.str());
    std::string out = all.substr(seen);
    seen = all.size();
    return out;
  }

  net::io_context io;
  agw::core::real_clock clock;
  heartbeat_wheel wheel{io, clock, 5ms};  // fine-grained: the tests' heartbeats are 20 ms
  agw::core::metrics stats;
  std::optional<beast::test::fail_count> fails;  // before the streams: they point at it
  test_stream peer{io};
  std::optional<test_stream> returned;  // what the end handler handed back
  std::shared_ptr<test_sse_stream> stream;
  std::vector<ended> ends;
  std::size_t seen = 0;
  bool started = false;
  std::size_t write_limit = 0;  // bytes the stream's socket takes per write (0: all)
};

TEST_CASE("sse_stream: the first write is the header and the retry preamble as the body's first chunk") {
  harness h(options_with());
  h.start();
  // async_write starts its first write_some inside start(): the peer has it before any poll.
  CHECK(h.fresh() == head_11 + chunk(preamble));
  CHECK(h.stats.sse_streams_open.load() == 1);
  h.io.poll();
  CHECK(h.fresh().empty());
  CHECK(h.ends.empty());
}

TEST_CASE("sse_stream: HTTP/1.0 (not chunked) writes raw frames and no terminator") {
  auto opts = options_with();
  opts.until_run = "r1";
  harness h(opts);
  h.start(/*chunked=*/false);
  CHECK(h.fresh() == head_10 + preamble);
  h.stream->deliver(batch({token(1), done(2)}));
  h.io.poll();
  CHECK(h.fresh() == text({token(1), done(2)}));
  REQUIRE(h.ends.size() == 1);
  CHECK(h.ends[0].why == sse_end_reason::run_done);
  CHECK_FALSE(h.ends[0].reusable);  // the body ends when the connection closes
}

TEST_CASE("sse_stream: a run's stream writes frames in id order, skips ids already sent, ends after its done") {
  auto opts = options_with(/*after_id=*/1);
  opts.until_run = "r1";
  harness h(opts);
  // Both batches are delivered before the start, and taken after it: they go out with
  // the header, in one write.
  h.stream->deliver(batch({token(1), token(2), token(3)}));
  h.stream->deliver(batch({token(3), token(4), token(5)}));
  h.start();
  CHECK(h.fresh().empty());
  h.io.poll();
  // 1 is not above after_id, the second 3 was sent already.
  CHECK(h.fresh() == head_11 + chunk(preamble) + chunk(text({token(2), token(3), token(4), token(5)})));

  // Another run's done does not end it; an old id alone writes nothing.
  h.stream->deliver(batch({done(6, "r0")}));
  h.io.poll();
  CHECK(h.fresh() == chunk(text({done(6, "r0")})));
  h.stream->deliver(batch({token(4)}));
  h.io.poll();
  CHECK(h.fresh().empty());
  CHECK(h.ends.empty());

  // Its run's done ends the response: frames after it are not written; the last chunk follows.
  h.stream->deliver(batch({token(7), done(8), token(9)}));
  h.io.poll();
  CHECK(h.fresh() == chunk(text({token(7), done(8)})) + std::string(last_chunk));
  REQUIRE(h.ends.size() == 1);
  CHECK(h.ends[0].why == sse_end_reason::run_done);
  CHECK(h.ends[0].reusable);
  CHECK(h.stats.sse_frames_written.load() == 7u);  // 2, 3, 4, 5, 6, 7, 8
  CHECK(h.stats.sse_streams_open.load() == 0);

  // The connection itself is handed back: what is written on it reaches the same peer.
  REQUIRE(h.returned);
  net::write(*h.returned, net::buffer(std::string("next")));
  CHECK(h.fresh() == "next");

  // Nothing after the end.
  h.stream->deliver(batch({token(10)}));
  h.stream->close(subscriber::close_reason::session_deleted);
  h.io.poll();
  CHECK(h.fresh().empty());
  CHECK(h.ends.size() == 1);
}

TEST_CASE("sse_stream: until_id ends once that id was sent, with the last chunk") {
  auto opts = options_with();
  opts.until_id = 3;
  harness h(opts);
  h.start();
  h.fresh();
  h.stream->deliver(batch({token(1), token(2)}));
  h.io.poll();
  CHECK(h.fresh() == chunk(text({token(1), token(2)})));
  CHECK(h.ends.empty());
  h.stream->deliver(batch({token(3)}));
  h.io.poll();
  CHECK(h.fresh() == chunk(text({token(3)})) + std::string(last_chunk));
  REQUIRE(h.ends.size() == 1);
  CHECK(h.ends[0].why == sse_end_reason::run_done);
  CHECK(h.ends[0].reusable);
}

TEST_CASE("sse_stream: until_id ends at that id even when later events come in the same batch") {
  auto opts = options_with();
  opts.until_id = 2;
  harness h(opts);
  h.start();
  h.fresh();
  // 3 and 4 belong to a run that started after the replay was decided.
  h.stream->deliver(batch({token(1), token(2), token(3), token(4)}));
  h.io.poll();
  CHECK(h.fresh() == chunk(text({token(1), token(2)})) + std::string(last_chunk));
  REQUIRE(h.ends.size() == 1);
  CHECK(h.ends[0].why == sse_end_reason::run_done);
}

TEST_CASE("sse_stream: a replay with nothing to send ends in the header's write") {
  auto opts = options_with(/*after_id=*/5);
  opts.until_id = 5;
  harness h(opts);
  h.start();
  CHECK(h.fresh() == head_11 + chunk(preamble) + std::string(last_chunk));
  h.io.poll();
  REQUIRE(h.ends.size() == 1);
  CHECK(h.ends[0].why == sse_end_reason::run_done);
  CHECK(h.ends[0].reusable);
}

TEST_CASE("sse_stream: what was delivered before start() but not yet taken goes out before a replay's end") {
  // A resume whose channel had to read the log first: subscribe() posted `reconnected`,
  // then the request resumed on the connection's context and started the stream before
  // that take ran (the context is the stream's strand: core/io_executor.hpp).
  auto opts = options_with(/*after_id=*/5);
  opts.until_id = 5;
  harness h(opts);
  auto reconnected = std::make_shared<const agw::core::event_frame>(agw::core::make_reconnected_frame(5, 0, false, 1));
  h.stream->deliver_unnumbered(reconnected);
  h.start();
  CHECK(h.fresh().empty());  // the take writes, with the header
  h.io.poll();
  CHECK(h.fresh() == head_11 + chunk(preamble) + chunk(reconnected->sse) + std::string(last_chunk));
  REQUIRE(h.ends.size() == 1);
  CHECK(h.ends[0].why == sse_end_reason::run_done);
}

TEST_CASE("sse_stream: the unnumbered reconnected frame is never skipped and does not move the cursor") {
  harness h(options_with(/*after_id=*/4));
  h.start();
  h.fresh();
  auto reconnected = std::make_shared<const agw::core::event_frame>(agw::core::make_reconnected_frame(4, 2, false, 1));
  h.stream->deliver_unnumbered(reconnected);
  h.stream->deliver(batch({token(4), token(5)}));
  h.io.poll();
  // Delivered together, written together: one chunk.
  CHECK(h.fresh() == chunk(reconnected->sse + token(5)->sse));
  CHECK(h.stats.sse_frames_written.load() == 1u);  // numbered frames only
}

TEST_CASE("sse_stream: a write the socket takes only in part goes on from where it stopped") {
  harness h(options_with());
  h.write_limit = 7;  // the socket takes 7 bytes per write: every first attempt is partial
  h.start();
  h.io.poll();
  CHECK(h.fresh() == head_11 + chunk(preamble));
  h.stream->deliver(batch({token(1), token(2)}));
  h.stream->deliver(batch({token(3)}));
  h.io.poll();
  CHECK(h.fresh() == chunk(text({token(1), token(2), token(3)})));
  CHECK(h.stats.sse_frames_written.load() == 3u);
  h.stream->deliver(batch({token(4)}));
  h.io.poll();
  CHECK(h.fresh() == chunk(text({token(4)})));
}

TEST_CASE("sse_stream: close(draining) ends a follower after what is queued, with the last chunk") {
  harness h(options_with());
  h.start();
  h.fresh();
  h.io.poll();
  h.stream->deliver(batch({token(1)}));
  h.stream->deliver(batch({token(2)}));
  h.stream->close(subscriber::close_reason::draining);
  h.io.poll();
  // What was delivered goes out first (the two batches in one write), then the terminator.
  CHECK(h.fresh() == chunk(text({token(1), token(2)})) + std::string(last_chunk));
  REQUIRE(h.ends.size() == 1);
  CHECK(h.ends[0].why == sse_end_reason::closed);
  CHECK_FALSE(h.ends[0].reusable);
  CHECK(h.stats.sse_streams_open.load() == 0);
}

TEST_CASE("sse_stream: close on an idle follower writes just the last chunk") {
  harness h(options_with());
  h.start();
  h.io.poll();
  h.fresh();
  h.stream->close(subscriber::close_reason::session_deleted);
  h.io.poll();
  CHECK(h.fresh() == last_chunk);
  REQUIRE(h.ends.size() == 1);
  CHECK(h.ends[0].why == sse_end_reason::closed);
  CHECK_FALSE(h.ends[0].reusable);
}

TEST_CASE("sse_stream: close(draining) is ignored by a stream that ends with its run; a deleted session still ends it") {
  SUBCASE("until_run: the run's done still ends it") {
    auto opts = options_with();
    opts.until_run = "r1";
    harness h(opts);
    h.start();
    h.io.poll();
    h.fresh();
    h.stream->deliver(batch({token(1)}));
    h.stream->close(subscriber::close_reason::draining);
    h.io.poll();
    CHECK(h.fresh() == chunk(text({token(1)})));
    CHECK(h.ends.empty());
    h.stream->deliver(batch({done(2)}));
    h.io.poll();
    CHECK(h.fresh() == chunk(text({done(2)})) + std::string(last_chunk));
    REQUIRE(h.ends.size() == 1);
    CHECK(h.ends[0].why == sse_end_reason::run_done);
  }
  SUBCASE("until_id: likewise") {
    auto opts = options_with();
    opts.until_id = 2;
    harness h(opts);
    h.start();
    h.io.poll();
    h.stream->close(subscriber::close_reason::draining);
    h.io.poll();
    CHECK(h.ends.empty());
  }
  SUBCASE("session_deleted ends a run's stream as closed") {
    auto opts = options_with();
    opts.until_run = "r1";
    harness h(opts);
    h.start();
    h.io.poll();
    h.fresh();
    h.stream->close(subscriber::close_reason::session_deleted);
    h.io.poll();
    CHECK(h.fresh() == last_chunk);
    REQUIRE(h.ends.size() == 1);
    CHECK(h.ends[0].why == sse_end_reason::closed);
    CHECK_FALSE(h.ends[0].reusable);
  }
  SUBCASE("broken (its sequence cannot go on) ends a run's stream too, cleanly") {
    auto opts = options_with();
    opts.until_run = "r1";
    harness h(opts);
    h.start();
    h.io.poll();
    h.fresh();
    h.stream->deliver(batch({token(1)}));
    h.stream->close(subscriber::close_reason::broken);
    h.io.poll();
    CHECK(h.fresh() == chunk(text({token(1)})) + std::string(last_chunk));
    REQUIRE(h.ends.size() == 1);
    CHECK(h.ends[0].why == sse_end_reason::closed);
    CHECK_FALSE(h.ends[0].reusable);
  }
}

// Runs the io_context until `done()` or `limit` passes; true when done() held in time.
template <class F>
bool run_until(net::io_context& io, F done, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  io.restart();
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    io.run_one_for(5ms);
  }
  return true;
}

TEST_CASE("sse_stream: a heartbeat after the heartbeat interval of silence, chunk-framed") {
  auto opts = options_with();
  opts.heartbeat = 20ms;
  harness h(opts);
  const auto started = std::chrono::steady_clock::now();
  h.start();
  h.io.poll();
  h.fresh();
  std::string got;
  CHECK(run_until(
      h.io, [&] { return !(got += h.fresh()).empty(); }, 2000ms));
  CHECK(std::chrono::steady_clock::now() - started >= 20ms);
  CHECK(got == chunk(std::string(agw::core::heartbeat_line())));
  // A frame written meanwhile is not followed by a heartbeat at once: the next is an interval after it.
  const auto written = std::chrono::steady_clock::now();  // before the write: its end is later
  h.stream->deliver(batch({token(1)}));
  h.io.poll();
  CHECK(h.fresh() == chunk(text({token(1)})));
  got.clear();
  CHECK(run_until(
      h.io, [&] { return !(got += h.fresh()).empty(); }, 2000ms));
  CHECK(std::chrono::steady_clock::now() - written >= 20ms);
  CHECK(got == chunk(std::string(agw::core::heartbeat_line())));
  CHECK(h.ends.empty());
}

TEST_CASE("sse_stream: HTTP/1.0 heartbeats are the raw comment line") {
  auto opts = options_with();
  opts.heartbeat = 20ms;
  harness h(opts);
  h.start(/*chunked=*/false);
  h.io.poll();
  h.fresh();
  std::string got;
  CHECK(run_until(
      h.io, [&] { return !(got += h.fresh()).empty(); }, 2000ms));
  CHECK(got == agw::core::heartbeat_line());
}

TEST_CASE("sse_stream: when_drained is called once, after everything delivered so far is written") {
  harness h(options_with());
  h.start();
  h.stream->deliver(batch({token(1)}));
  h.stream->deliver(batch({token(2)}));
  int calls = 0;
  std::string wire_at_call;
  h.stream->when_drained([&] {
    ++calls;
    wire_at_call = std::string(h.peer.str());
  });
  // The callback waits for what was delivered before it to be written (the two batches
  // go out together), not only for the queue to empty.
  h.io.poll();
  CHECK(calls == 1);
  CHECK(wire_at_call == head_11 + chunk(preamble) + chunk(text({token(1), token(2)})));
  h.stream->deliver(batch({token(3)}));
  h.io.poll();
  CHECK(calls == 1);
}

TEST_CASE("sse_stream: when_drained on an idle stream is called at once") {
  harness h(options_with());
  h.start();
  h.io.poll();
  int calls = 0;
  h.stream->when_drained([&] { ++calls; });
  h.io.poll();
  CHECK(calls == 1);
}

TEST_CASE("sse_stream: when_drained is never called after the stream finished") {
  auto opts = options_with();
  opts.until_id = 1;
  harness h(opts);
  h.start();
  h.stream->deliver(batch({token(1)}));
  int calls = 0;
  SUBCASE("asked after the end") {
    h.io.poll();
    REQUIRE(h.ends.size() == 1);
    h.stream->when_drained([&] { ++calls; });
    h.io.poll();
  }
  SUBCASE("asked while the last write is in flight") {
    h.stream->when_drained([&] { ++calls; });
    h.io.poll();
    REQUIRE(h.ends.size() == 1);
  }
  CHECK(calls == 0);
}

TEST_CASE("sse_stream: a write that fails ends the stream as client_gone, once, and nothing follows") {
  // Writes: 1 the header, 2 frame 1, 3 frame 2, 4 frame 3.
  for (std::size_t fail_at = 1; fail_at <= 4; ++fail_at) {
    CAPTURE(fail_at);
    harness h(options_with(), fail_at);
    int drained = 0;
    std::string expected = fail_at > 1 ? head_11 + chunk(preamble) : "";
    h.start();
    h.io.poll();
    for (std::int64_t id = 1; id <= 3; ++id) {
      if (static_cast<std::size_t>(id) + 1 < fail_at) expected += chunk(token(id)->sse);
      h.stream->deliver(batch({token(id)}));
      // Asked while the write is in flight: the failing write must not call it.
      if (static_cast<std::size_t>(id) + 1 == fail_at) h.stream->when_drained([&] { ++drained; });
      h.io.poll();
    }
    h.stream->deliver(batch({token(4)}));
    h.stream->close(subscriber::close_reason::session_deleted);
    h.io.poll();
    CHECK(h.fresh() == expected);
    REQUIRE(h.ends.size() == 1);
    CHECK(h.ends[0].why == sse_end_reason::client_gone);
    CHECK_FALSE(h.ends[0].reusable);
    CHECK(drained == 0);
    CHECK(h.stats.sse_streams_open.load() == 0);
    CHECK(h.stats.sse_frames_written.load() == (fail_at > 2 ? fail_at - 2 : 0u));
  }
}

TEST_CASE("sse_stream: a write that makes no progress for write_timeout ends as stalled (loopback socket)") {
  using tcp = net::ip::tcp;
  net::io_context io;
  agw::core::metrics stats;
  tcp::acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  // Small buffers on both sides, and a peer that never reads: the write blocks early.
  tcp::socket client(io);
  client.open(tcp::v4());
  client.set_option(net::socket_base::receive_buffer_size(4096));
  client.connect(acceptor.local_endpoint());
  tcp::socket server(io);
  acceptor.accept(server);
  server.set_option(net::socket_base::send_buffer_size(4096));

  auto opts = options_with();
  opts.heartbeat = 20ms;
  opts.write_timeout = 100ms;
  agw::core::real_clock clock;
  heartbeat_wheel wheel(io, clock, 5ms);
  auto stream = std::make_shared<agw::gateway::sse_stream>(io.get_executor(), stats, wheel, opts);
  std::vector<sse_end_reason> ends;
  stream->start(std::move(server), head_11, preamble, true,
                [&](const std::shared_ptr<agw::gateway::sse_stream>&, sse_end_reason why, tcp::socket socket, bool reusable) {
                  ends.push_back(why);
                  CHECK_FALSE(reusable);
                  // The stalled write was cancelled, not the socket closed: the connection's owner closes it.
                  CHECK(socket.is_open());
                  boost::system::error_code ignored;
                  socket.close(ignored);
                });
  const auto started = std::chrono::steady_clock::now();
  stream->deliver(batch({token(1, "r1", std::string(8 << 20, 'x'))}));
  CHECK(run_until(
      io, [&] { return !ends.empty(); }, 5000ms));
  CHECK(std::chrono::steady_clock::now() - started >= 100ms);
  REQUIRE(ends.size() == 1);
  CHECK(ends[0] == sse_end_reason::stalled);
  CHECK(stats.sse_slow_subscribers_dropped.load() == 1u);
  CHECK(stats.sse_streams_open.load() == 0);
  // Nothing after the end.
  io.restart();
  io.poll();
  CHECK(ends.size() == 1);
}

}  // namespace

namespace {

using agw::test::manual_clock;

TEST_CASE("sse_stream: on the wheel's clock, a heartbeat comes after an interval of silence, never before; a write moves it") {
  manual_clock clock;
  net::io_context io;
  heartbeat_wheel wheel(io, clock, 250ms);
  agw::core::metrics stats;
  test_stream peer(io);
  auto opts = options_with();
  opts.heartbeat = 5s;
  opts.write_timeout = 30s;
  auto stream = std::make_shared<test_sse_stream>(io.get_executor(), stats, wheel, opts);
  test_stream ours(io);
  ours.connect(peer);
  std::vector<sse_end_reason> ends;
  stream->start(std::move(ours), head_11, preamble, true,
                [&](const std::shared_ptr<test_sse_stream>&, sse_end_reason why, test_stream, bool) { ends.push_back(why); });
  std::size_t seen = 0;
  auto fresh = [&] {
    io.restart();
    io.poll();
    const std::string all(peer.str());
    std::string out = all.substr(seen);
    seen = all.size();
    return out;
  };
  auto after = [&](std::chrono::steady_clock::duration d) {
    clock.advance(d);
    return fresh();
  };
  const std::string beat = chunk(std::string(agw::core::heartbeat_line()));
  CHECK(fresh() == head_11 + chunk(preamble));
  CHECK(after(4999ms).empty());
  CHECK(after(1ms) == beat);  // 5 s: on a tick
  CHECK(after(2s).empty());
  stream->deliver(batch({token(1)}));
  CHECK(fresh() == chunk(text({token(1)})));  // 7 s
  // Woken at 10 s (an interval after the heartbeat), it finds the 7 s write and waits for 12 s.
  CHECK(after(4900ms).empty());
  CHECK(after(100ms) == beat);
  CHECK(after(5s) == beat);  // 17 s
  CHECK(wheel.size() == 1);
  stream->close(subscriber::close_reason::session_deleted);
  CHECK(fresh() == last_chunk);
  REQUIRE(ends.size() == 1);
  CHECK(ends[0] == sse_end_reason::closed);
  CHECK(wheel.size() == 0);  // finished: off the wheel, and released by it
  CHECK(stream.use_count() == 1);
}

TEST_CASE("sse_stream: a heartbeat the socket cannot take goes through the write loop, under the write timeout") {
  using tcp = net::ip::tcp;
  manual_clock clock;
  net::io_context io;
  heartbeat_wheel wheel(io, clock, 250ms);
  agw::core::metrics stats;
  tcp::acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  tcp::socket client(io);
  client.open(tcp::v4());
  client.set_option(net::socket_base::receive_buffer_size(4096));
  client.connect(acceptor.local_endpoint());
  tcp::socket server(io);
  acceptor.accept(server);
  server.set_option(net::socket_base::send_buffer_size(4096));
  const int fd = server.native_handle();

  auto opts = options_with();
  opts.heartbeat = 1s;
  opts.write_timeout = 2s;
  auto stream = std::make_shared<agw::gateway::sse_stream>(io.get_executor(), stats, wheel, opts);
  std::vector<sse_end_reason> ends;
  stream->start(std::move(server), head_11, preamble, true,
                [&](const std::shared_ptr<agw::gateway::sse_stream>&, sse_end_reason why, tcp::socket socket, bool) {
                  ends.push_back(why);
                  boost::system::error_code ignored;
                  socket.close(ignored);
                });
  auto settle = [&] {
    io.restart();
    io.poll();
  };
  settle();
  // The peer reads nothing: fill the stream's send buffer behind its back (same socket).
  const std::string junk(1024, 'j');
  while (::send(fd, junk.data(), junk.size(), MSG_DONTWAIT | MSG_NOSIGNAL) > 0) {
  }
  while (::send(fd, junk.data(), 1, MSG_DONTWAIT | MSG_NOSIGNAL) > 0) {
  }
  clock.advance(1s);
  settle();
  // The heartbeat found no room: it waits in the write loop; nothing has ended yet.
  CHECK(ends.empty());
  CHECK(stats.sse_slow_subscribers_dropped.load() == 0u);
  clock.advance(1s);
  settle();
  CHECK(ends.empty());  // 1 s into the write: within the timeout
  clock.advance(1s);
  settle();
  REQUIRE(ends.size() == 1);  // 2 s into the write: cut
  CHECK(ends[0] == sse_end_reason::stalled);
  CHECK(stats.sse_slow_subscribers_dropped.load() == 1u);
  CHECK(stats.sse_streams_open.load() == 0);
}

}  // namespace

namespace {
// A stand-in encoding: one line per frame naming its id and type.
struct line_encoder final : agw::gateway::frame_encoder {
  void encode(const agw::core::event_frame& f, std::string& out) override {
    out += "E" + std::to_string(f.id) + " " + std::string(f.type_name()) + "\n";
  }
};
}  // namespace

TEST_CASE("sse_stream: with an encoder (AG-UI's seam) the frames are written in its encoding, skips and the end unchanged") {
  auto opts = options_with(/*after_id=*/1);
  opts.until_run = "r1";
  opts.encoder = std::make_shared<line_encoder>();
  harness h(opts);
  h.start();
  CHECK(h.fresh() == head_11 + chunk(preamble));
  h.stream->deliver(batch({token(1), token(2), token(3)}));
  h.io.poll();
  CHECK(h.fresh() == chunk("E2 token\nE3 token\n"));
  h.stream->deliver(batch({token(3), done(4), token(5)}));
  h.io.poll();
  CHECK(h.fresh() == chunk("E4 done\n") + std::string(last_chunk));
  REQUIRE(h.ends.size() == 1);
  CHECK(h.ends[0].why == sse_end_reason::run_done);
  CHECK(h.ends[0].reusable);
}

namespace {
// An encoding that can no longer encode from frame `lost_at` on (a shared encoding the
// stream fell behind).
struct losing_encoder final : agw::gateway::frame_encoder {
  explicit losing_encoder(std::int64_t at) : lost_at(at) {}
  void encode(const agw::core::event_frame& f, std::string& out) override {
    if (f.id >= lost_at) {
      gone = true;
      return;
    }
    out += "E" + std::to_string(f.id) + "\n";
  }
  bool lost() const override { return gone; }
  std::int64_t lost_at;
  bool gone = false;
};
}  // namespace

TEST_CASE("sse_stream: an encoder that is lost ends the stream at once as stalled, writing nothing more") {
  auto opts = options_with(/*after_id=*/0);
  opts.until_run = "r1";
  opts.encoder = std::make_shared<losing_encoder>(3);
  harness h(opts);
  h.start();
  CHECK(h.fresh() == head_11 + chunk(preamble));
  h.stream->deliver(batch({token(1), token(2)}));
  h.io.poll();
  CHECK(h.fresh() == chunk("E1\nE2\n"));
  h.stream->deliver(batch({token(3), token(4)}));
  h.io.poll();
  CHECK(h.fresh().empty());
  REQUIRE(h.ends.size() == 1);
  CHECK(h.ends[0].why == sse_end_reason::stalled);
  CHECK_FALSE(h.ends[0].reusable);
}
