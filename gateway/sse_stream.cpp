#include "gateway/sse_stream.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include "core/events/sse_format.hpp"

namespace agw::gateway {

namespace {
constexpr auto use_tuple = net::as_tuple(net::use_awaitable);
}

sse_stream::sse_stream(net::any_io_executor executor, core::metrics& stats, options opts)
    : executor_(executor), stats_(stats), opts_(std::move(opts)), signal_(executor), last_sent_(opts_.after_id) {}

void sse_stream::deliver(const core::frame_batch& frames) {
  if (overflow_) return;
  // Only a backlog the writer has not taken counts: one big batch to an idle writer is fine.
  const auto before = queued_.fetch_add(frames->size());
  if (before > 0 && before + frames->size() > opts_.max_queued) {
    overflow_ = true;
    stats_.sse_slow_subscribers_dropped++;
    net::post(executor_, [self = shared_from_this()] {
      self->signal_.cancel();
      // A write stalled on a client that stopped reading would hold the connection until
      // the write timeout: cut it now (what the kernel already holds still reaches the client).
      if (self->writing_) self->writing_->cancel();
    });
    return;
  }
  net::post(executor_, [self = shared_from_this(), frames] {
    self->queue_.push_back(frames);
    self->signal_.cancel();
  });
}

void sse_stream::deliver_unnumbered(std::string text) {
  auto frame = std::make_shared<core::event_frame>();
  frame->id = -1;  // never skipped, never advances the cursor
  frame->text = std::move(text);
  net::post(executor_, [self = shared_from_this(), frames = std::make_shared<const std::vector<core::frame_ptr>>(1, std::move(frame))] {
    self->queue_.push_back(frames);
    self->queued_ += frames->size();
    self->signal_.cancel();
  });
}

void sse_stream::close(close_reason why) {
  // A run's own stream outlives a drain until its done (the drain deadline bounds it).
  if (why == close_reason::draining && (opts_.until_run || opts_.until_id)) return;
  net::post(executor_, [self = shared_from_this()] {
    self->closed_ = true;
    self->signal_.cancel();
  });
}

awaitable<bool> sse_stream::write_chunk(beast::tcp_stream& stream, const std::vector<net::const_buffer>& pieces) {
  std::size_t size = 0;
  for (const auto& p : pieces) size += p.size();
  if (size == 0) co_return true;
  char head[24];
  std::vector<net::const_buffer> buffers;
  buffers.reserve(pieces.size() + 2);
  if (chunked_) {
    int n = std::snprintf(head, sizeof head, "%zx\r\n", size);
    buffers.emplace_back(head, static_cast<std::size_t>(n));
  }
  buffers.insert(buffers.end(), pieces.begin(), pieces.end());
  if (chunked_) buffers.emplace_back("\r\n", 2);
  // A deadline per write: a client that stops reading is dropped, a quiet one is not.
  stream.expires_after(opts_.write_timeout);
  writing_ = &stream;
  struct not_writing {
    beast::tcp_stream*& at;
    ~not_writing() { at = nullptr; }
  } guard{writing_};
  auto [ec, written] = co_await net::async_write(stream, buffers, use_tuple);
  stream.expires_never();
  co_return !ec;
}

awaitable<sse_stream::end_reason> sse_stream::pump(beast::tcp_stream& stream, http::response<http::empty_body>& head,
                                                   std::string preamble) {
  stats_.sse_streams_open++;
  struct open_gauge {
    core::metrics& stats;
    ~open_gauge() { stats.sse_streams_open--; }
  } gauge{stats_};

  // HTTP/1.0 has no chunked coding: the body then ends when the connection closes.
  chunked_ = head.version() >= 11;
  if (chunked_) head.chunked(true);
  else head.keep_alive(false);
  http::response_serializer<http::empty_body> serializer{head};
  stream.expires_after(opts_.write_timeout);
  auto [hec, hn] = co_await http::async_write_header(stream, serializer, use_tuple);
  stream.expires_never();
  if (hec) co_return end_reason::client_gone;
  std::vector<net::const_buffer> pieces{net::buffer(preamble)};
  if (!co_await write_chunk(stream, pieces)) co_return end_reason::client_gone;

  std::vector<core::frame_batch> taken;
  bool finished = opts_.until_id && *opts_.until_id <= last_sent_ && queue_.empty();
  while (!finished) {
    if (queue_.empty() && !closed_ && !overflow_) {
      signal_.expires_after(opts_.heartbeat);
      auto [wec] = co_await signal_.async_wait(use_tuple);
      if (!wec && queue_.empty() && !closed_ && !overflow_) {
        // The timer ran out with nothing to send: keep proxies from cutting an idle stream.
        pieces.assign({net::buffer(core::heartbeat_line())});
        if (!co_await write_chunk(stream, pieces)) co_return end_reason::client_gone;
        continue;
      }
    }
    if (overflow_) co_return end_reason::overflow;
    // Everything queued goes out in one chunk (one syscall), skipping ids already sent.
    taken.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
    queue_.clear();
    pieces.clear();
    std::size_t frames = 0;
    for (const auto& batch : taken) {
      queued_ -= batch->size();
      for (const auto& f : *batch) {
        if (finished) break;
        if (f->id < 0) {
          pieces.push_back(net::buffer(f->text));
          continue;
        }
        if (f->id <= last_sent_) continue;
        pieces.push_back(net::buffer(f->text));
        last_sent_ = f->id;
        ++frames;
        if (opts_.until_run && f->type == "done" && f->run_id == *opts_.until_run) finished = true;
      }
    }
    if (opts_.until_id && last_sent_ >= *opts_.until_id) finished = true;
    if (!co_await write_chunk(stream, pieces)) co_return overflow_ ? end_reason::overflow : end_reason::client_gone;
    stats_.sse_frames_written += frames;
    if (!finished && closed_ && queue_.empty()) co_return end_reason::closed;
  }
  if (!chunked_) co_return end_reason::run_done;
  // The last chunk ends the response cleanly; the connection may be reused.
  static constexpr char last_chunk[] = "0\r\n\r\n";
  stream.expires_after(opts_.write_timeout);
  auto [lec, ln] = co_await net::async_write(stream, net::buffer(last_chunk, 5), use_tuple);
  stream.expires_never();
  co_return lec ? end_reason::client_gone : end_reason::run_done;
}

}  // namespace agw::gateway
