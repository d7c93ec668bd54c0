#pragma once
// One SSE response: a core::subscriber with a bounded queue of frame batches
// and one write loop on the connection's strand.
//
// deliver()/close() are called on the session's strand and only post here.
// Overflow policy: when more than `max_queued` frames wait, the stream is cut
// (the client resumes with Last-Event-ID and loses nothing); the producer is
// never slowed. Heartbeats come from this loop's own timer while the queue is
// empty, never from the run.
#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <optional>
#include <string>

#include "core/events/subscriber.hpp"
#include "core/metrics.hpp"
#include <boost/beast/http/empty_body.hpp>
#include <vector>

#include "gateway/http_types.hpp"

namespace agw::gateway {

class sse_stream : public core::subscriber, public std::enable_shared_from_this<sse_stream> {
 public:
  struct options {
    std::chrono::steady_clock::duration heartbeat;
    std::chrono::steady_clock::duration write_timeout;
    std::size_t max_queued = 1024;
    std::int64_t after_id = 0;              // frames with ids up to this are skipped
    std::optional<std::string> until_run;  // end after this run's done
    std::optional<std::int64_t> until_id;  // end once this id was sent (a replay with no live run)
  };

  // Queues an unnumbered frame (reconnected) in order with the numbered ones.
  void deliver_unnumbered(std::string text);

  enum class end_reason { run_done, client_gone, overflow, closed };

  sse_stream(net::any_io_executor executor, core::metrics& stats, options opts);

  void deliver(const core::frame_batch& frames) override;
  std::size_t backlog() const override { return queued_.load(); }
  void close(close_reason why) override;

  // Writes the response header and `preamble` (retry:, maybe reconnected), then
  // frames as they come, until the end condition. Runs on the connection's strand.
  awaitable<end_reason> pump(beast::tcp_stream& stream, http::response<http::empty_body>& head, std::string preamble);

  std::int64_t last_sent_id() const { return last_sent_; }

 private:
  // One HTTP chunk holding every piece; false when the client is gone.
  awaitable<bool> write_chunk(beast::tcp_stream& stream, const std::vector<net::const_buffer>& pieces);

  net::any_io_executor executor_;
  core::metrics& stats_;
  options opts_;
  net::steady_timer signal_;  // cancelled to wake the write loop
  std::deque<core::frame_batch> queue_;
  std::atomic<std::size_t> queued_{0};
  std::atomic<bool> overflow_{false};
  bool closed_ = false;
  bool chunked_ = true;
  std::int64_t last_sent_;
  beast::tcp_stream* writing_ = nullptr;  // the connection while a frame write is in flight (this strand only)
};

}  // namespace agw::gateway
