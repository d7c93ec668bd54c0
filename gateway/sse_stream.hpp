#pragma once
// One SSE response: a core::subscriber that owns its connection's socket while
// it streams, with a bounded queue of frame batches and one write in flight.
//
// The handler hands the socket over (the connection's coroutine ends, so an
// idle follower costs this object and its socket: no coroutine frames, no
// request buffers, no timer of its own). When the stream ends, `on_end` gets the
// socket back: a POST stream whose run is done may go on serving the connection.
//
// Executor: the connection's strand (the socket's executor: its io context,
// core/io_executor.hpp). deliver()/close() are called on the session's strand and
// only post here.
// Back-pressure: the queue holds what the session channel delivered; the channel
// stops delivering past its bound and asks when_drained(), so a stream that reads
// slowly catches up from memory or the log instead of being cut (subscriber.hpp).
// The stream is cut only when a write makes no progress for `write_timeout`.
// A client that closes its end is let go at once, also while the stream is quiet: one
// read-readiness wait per stream (no buffer) peeks when the socket becomes readable.
// Every end the gateway decides (run done, drain, session deleted) goes out after
// a whole frame and, when chunked, with the last chunk.
// Time: the io_context's heartbeat_wheel wakes the stream about once per heartbeat
// interval whatever the event rate (it is not moved on each write: the stream
// keeps its last write's time and, woken early, schedules itself again). Woken
// after `heartbeat` of silence, it writes the heartbeat with one non-blocking
// write (no handler queued); woken while a write has been in flight for
// `write_timeout`, it cuts that write.
//
// The write loop is a class template over the stream it writes to, so that a test can
// drive it with Beast's in-memory test::stream (fail the n-th write, read the exact
// bytes) while the server keeps one compiled instance. Its member definitions live in
// sse_stream_impl.ipp, included by sse_stream.cpp (which instantiates it for
// tcp::socket, the `sse_stream` every handler uses) and by the test that instantiates
// it for test::stream: no header-only code in every includer, no test code in the
// library.
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/events/subscriber.hpp"
#include "core/metrics.hpp"
#include "gateway/encodings/frame_encoder.hpp"
#include "gateway/heartbeat_wheel.hpp"
#include "gateway/http_types.hpp"

namespace agw::gateway {

// The parts of a stream that do not depend on what it writes to.
struct sse_stream_options {
  std::chrono::steady_clock::duration heartbeat;
  std::chrono::steady_clock::duration write_timeout;
  std::int64_t after_id = 0;             // frames with ids up to this are skipped
  std::optional<std::string> until_run;  // end after this run's done
  std::optional<std::int64_t> until_id;  // end once this id was sent (a replay with no live run)
  // Another wire encoding (AG-UI, ...): each frame sent goes through it; none: the frames' SSE text.
  std::shared_ptr<frame_encoder> encoder;
};
enum class sse_end_reason { run_done, client_gone, stalled, closed };

// `Stream`: an AsyncWriteStream, movable, whose executor is (or runs on) `executor`.
template <class Stream>
class basic_sse_stream final : public core::subscriber,
                               public heartbeat_wheel::member,
                               public std::enable_shared_from_this<basic_sse_stream<Stream>> {
 public:
  using options = sse_stream_options;
  using end_reason = sse_end_reason;
  // Called once, on the stream's executor. `reusable`: the response ended cleanly
  // (chunked, to its end) and the socket may serve the connection's next request.
  using end_handler =
      std::function<void(const std::shared_ptr<basic_sse_stream>& self, end_reason, Stream socket, bool reusable)>;

  // `wheel` (heartbeat_wheel::of the executor's io_context, in the server) outlives the stream's work.
  basic_sse_stream(net::any_io_executor executor, core::metrics& stats, heartbeat_wheel& wheel, options opts);

  // --- any thread (post to the stream's executor) ---
  void deliver(const core::frame_batch& frames) override;
  std::size_t backlog() const override { return queued_.load(); }
  void when_drained(std::function<void()> drained) override;
  void close(close_reason why) override;
  // Queues an unnumbered frame (id -1: reconnected) in order with the numbered ones; it is
  // never skipped and never moves the cursor.
  void deliver_unnumbered(core::frame_ptr frame);

  // Takes the connection: writes `head` (the HTTP response header), then the body,
  // chunked when `chunked`: `preamble` (retry:, ...) and frames as they come, until
  // the end condition. Call once, on the stream's executor.
  void start(Stream socket, std::string head, std::string preamble, bool chunked, end_handler on_end);

 private:
  void take(core::frame_batch frames);
  void write_more();
  void gather(const core::frame_batch& batch);  // its frames still to send, into pieces_
  void frame_body(std::size_t body_from);       // chunk framing around pieces_[body_from..]
  void on_written(const boost::system::error_code& ec);
  void on_due(std::shared_ptr<heartbeat_wheel::member> self) override;
  void wake_at(core::steady_time at);
  void on_timer();
  void write_heartbeat(core::steady_time now);
  void watch_peer();  // waits for the socket to be readable: the client's end, on_readable
  void on_readable(const boost::system::error_code& ec);
  void notify_if_drained();
  void finish(end_reason why);

  net::any_io_executor executor_;
  core::metrics& stats_;
  options opts_;
  std::optional<Stream> socket_;  // set by start(), handed back by finish()
  heartbeat_wheel& wheel_;
  core::steady_time wake_at_{};  // when the wheel was last asked to wake us
  end_handler on_end_;

  std::vector<core::frame_batch> queue_;     // delivered, not written yet
  std::vector<core::frame_batch> in_write_;  // what the write in flight points into
  std::vector<net::const_buffer> pieces_;    // that write's buffers
  std::string head_;                         // the header (and preamble) until written
  std::string encoded_;                      // the write's frames in opts_.encoder's encoding
  char chunk_size_[20];
  // Deliveries posted, not yet taken. 32 bits, beside chunk_size_: it fits the padding
  // there, so an idle stream's allocation stays in its size class.
  std::atomic<std::uint32_t> takes_pending_{0};
  std::atomic<std::size_t> queued_{0};
  std::function<void()> drained_;  // the channel waits for the queue to be written
  std::int64_t last_sent_;
  core::steady_time last_write_;  // end of the last write (heartbeats count), on the wheel's clock
  core::steady_time write_started_;
  std::size_t frames_in_write_ = 0;
  bool started_ = false;
  bool chunked_ = true;
  bool writing_ = false;
  bool closed_ = false;        // told to end once the queue is written
  bool stalled_ = false;       // a write made no progress for the write timeout
  bool encoder_lost_ = false;  // the encoder can make nothing more (frame_encoder::lost)
  bool peer_gone_ = false;     // the client closed its end (watch_peer)
  int empty_wakes_ = 0;        // the watch's wakes that found nothing (it stops at 3)
  bool reached_end_ = false;   // the write in flight ends the response
  bool finished_ = false;
};

// The server's streams: compiled once, in sse_stream.cpp.
extern template class basic_sse_stream<net::ip::tcp::socket>;
using sse_stream = basic_sse_stream<net::ip::tcp::socket>;

}  // namespace agw::gateway
