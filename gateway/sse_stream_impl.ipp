#pragma once
// The member definitions of basic_sse_stream (sse_stream.hpp). Included only by
// sse_stream.cpp, which instantiates the server's tcp::socket stream, and by tests
// that instantiate it over Beast's test::stream: see the header for why.
#include <sys/socket.h>
#include <sys/uio.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <cerrno>
#include <charconv>
#include <iterator>
#include <string>
#include <string_view>

#include "core/events/sse_format.hpp"
#include "gateway/sse_stream.hpp"

namespace agw::gateway {

namespace sse_detail {
inline constexpr char crlf[] = "\r\n";
inline constexpr char last_chunk[] = "0\r\n\r\n";

// Ends the write in flight: a socket cancels it; Beast's test::stream has no cancel
// (its writes never block), so it is closed instead.
template <class Stream>
void cancel_write(Stream& stream) {
  if constexpr (requires(boost::system::error_code & ec) { stream.cancel(ec); }) {
    boost::system::error_code ignored;
    stream.cancel(ignored);
  } else {
    stream.close();
  }
}

// One write attempt that neither blocks nor queues anything: the bytes the stream
// took (0 when its send buffer is full). A socket is written with MSG_DONTWAIT (its
// mode is left alone: the connection may get it back), all buffers in one sendmsg;
// Beast's test::stream never blocks.
template <class Stream, class Buffers>
std::size_t write_now(Stream& stream, const Buffers& buffers, boost::system::error_code& ec) {
  if constexpr (requires { stream.native_handle(); }) {
    iovec iov[64];
    std::size_t count = 0;
    for (auto it = net::buffer_sequence_begin(buffers); it != net::buffer_sequence_end(buffers) && count < std::size(iov); ++it) {
      const net::const_buffer b(*it);
      iov[count++] = {const_cast<void*>(b.data()), b.size()};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = count;
    const auto n = ::sendmsg(stream.native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ec.assign(errno, boost::system::system_category());
    return 0;
  } else {
    return stream.write_some(buffers, ec);
  }
}

// A stream never reads its socket, so without a watch a client that closes a quiet
// stream would be noticed only by the next write to fail (a heartbeat or two later).
// Beast's test::stream has no wait: its streams go without the watch.
template <class Stream>
constexpr bool can_watch_peer = requires(Stream& s) {
  s.async_wait(Stream::wait_read, [](const boost::system::error_code&) {});
};

// What the client has done on a stream's socket, seen without taking any byte.
enum class peer_state { nothing, sent_bytes, gone };
template <class Stream>
peer_state peek_peer(Stream& stream) {
  char byte;
  const auto n = ::recv(stream.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return peer_state::sent_bytes;
  // End of stream: the client closed (a half-close counts too, as nginx and Go's server
  // count it: an SSE client has nothing to send and reads until it leaves).
  if (n == 0) return peer_state::gone;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? peer_state::nothing : peer_state::gone;
}

// A chunk's size line ("1a2\r\n") into `out` (20 bytes hold any size_t); its length.
// Once per write on the token path: std::to_chars, not snprintf's format parsing.
inline std::size_t chunk_size_line(char (&out)[20], std::size_t size) {
  const auto end = std::to_chars(out, out + sizeof out - 2, size, 16).ptr;
  end[0] = '\r';
  end[1] = '\n';
  return static_cast<std::size_t>(end + 2 - out);
}

// The heartbeat as it goes on the wire, made once: one chunk, or (HTTP/1.0) the bare line.
inline std::string_view heartbeat_bytes(bool chunked) {
  static const std::string bare(core::heartbeat_line());
  static const std::string framed = [] {
    char size[20];
    return std::string(size, chunk_size_line(size, bare.size())) + bare + crlf;
  }();
  return chunked ? framed : bare;
}
}  // namespace sse_detail

template <class Stream>
basic_sse_stream<Stream>::basic_sse_stream(net::any_io_executor executor, core::metrics& stats, heartbeat_wheel& wheel,
                                           options opts)
    : executor_(std::move(executor)), stats_(stats), opts_(std::move(opts)), wheel_(wheel), last_sent_(opts_.after_id) {}

template <class Stream>
void basic_sse_stream<Stream>::deliver(const core::frame_batch& frames) {
  // Bounded by the channel: it stops delivering while this backlog is over its bound.
  queued_ += frames->size();
  ++takes_pending_;
  net::post(executor_, [self = this->shared_from_this(), frames] { self->take(frames); });
}

template <class Stream>
void basic_sse_stream<Stream>::when_drained(std::function<void()> drained) {
  // Posted after every deliver() the channel made before asking, so it sees their frames queued.
  net::post(executor_, [self = this->shared_from_this(), drained = std::move(drained)]() mutable {
    if (self->finished_) return;
    self->drained_ = std::move(drained);
    self->notify_if_drained();
  });
}

template <class Stream>
void basic_sse_stream<Stream>::notify_if_drained() {
  if (!drained_ || writing_ || !queue_.empty()) return;
  auto drained = std::move(drained_);
  drained_ = nullptr;
  drained();
}

template <class Stream>
void basic_sse_stream<Stream>::deliver_unnumbered(core::frame_ptr frame) {
  auto frames = core::make_frame_batch({std::move(frame)});
  queued_ += 1;
  ++takes_pending_;
  net::post(executor_, [self = this->shared_from_this(), frames = std::move(frames)] { self->take(frames); });
}

template <class Stream>
void basic_sse_stream<Stream>::close(close_reason why) {
  // A run's own stream outlives a drain until its done (the drain deadline bounds it);
  // every other reason ends every stream.
  if (why == close_reason::draining && (opts_.until_run || opts_.until_id)) return;
  net::post(executor_, [self = this->shared_from_this()] {
    self->closed_ = true;
    self->write_more();
  });
}

template <class Stream>
void basic_sse_stream<Stream>::take(core::frame_batch frames) {
  // Batches delivered together are written together: only the last take queued writes.
  const bool last = --takes_pending_ == 0;
  if (finished_) return;
  queue_.push_back(std::move(frames));
  if (last) write_more();
}

template <class Stream>
void basic_sse_stream<Stream>::start(Stream socket, std::string head, std::string preamble, bool chunked, end_handler on_end) {
  stats_.sse_streams_open++;
  socket_.emplace(std::move(socket));
  on_end_ = std::move(on_end);
  chunked_ = chunked;
  head_ = std::move(head);
  // The preamble is the body's first chunk, sent with the header in one write.
  if (!preamble.empty()) {
    if (chunked_) {
      head_.append(chunk_size_, sse_detail::chunk_size_line(chunk_size_, preamble.size()));
    }
    head_ += preamble;
    if (chunked_) head_ += sse_detail::crlf;
  }
  started_ = true;
  last_write_ = wheel_.now();
  wake_at(last_write_ + opts_.heartbeat);
  // What subscribe() queued (such as `reconnected`) may not have been taken yet: the
  // handler that resumed the request can run before the takes posted ahead of it (the
  // connection's strand is its context, core/io_executor.hpp). The last of them writes
  // then; a write now could end a replay with nothing to send before they came.
  if (takes_pending_.load() == 0) write_more();
  watch_peer();
}

template <class Stream>
void basic_sse_stream<Stream>::watch_peer() {
  // One reactor wait, no buffer; a client that sends nothing never wakes it. Arming it
  // costs one epoll_ctl (Asio re-arms the descriptor), which is also why a close that
  // came before the wait was armed is still reported.
  if constexpr (sse_detail::can_watch_peer<Stream>) {
    if (finished_) return;
    socket_->async_wait(Stream::wait_read,
                        [self = this->shared_from_this()](const boost::system::error_code& ec) { self->on_readable(ec); });
  }
}

template <class Stream>
void basic_sse_stream<Stream>::on_readable(const boost::system::error_code& ec) {
  if constexpr (sse_detail::can_watch_peer<Stream>) {
    if (finished_) return;  // finish() cancels the watch
    // Cancelled with a write the wheel cut for its timeout that had just completed: the
    // stream goes on, and so does the watch.
    if (ec == net::error::operation_aborted) return watch_peer();
    const auto state = ec ? sse_detail::peer_state::gone : sse_detail::peek_peer(*socket_);
    // Woken with nothing to read: wait again, but not for ever (a socket that stayed
    // readable with nothing to peek would spin); the writes still notice an end.
    if (state == sse_detail::peer_state::nothing) {
      if (++empty_wakes_ < 3) watch_peer();
      return;
    }
    // Bytes (a pipelined next request) stay in the socket for the connection that may
    // follow this stream; the watch stops there, and a write that fails still ends it.
    if (state == sse_detail::peer_state::sent_bytes) return;
    peer_gone_ = true;
    // A write in flight is cut and its failure ends the stream; none: it ends here.
    if (writing_) return sse_detail::cancel_write(*socket_);
    finish(end_reason::client_gone);
  }
}

template <class Stream>
void basic_sse_stream<Stream>::write_more() {
  if (!started_ || writing_ || finished_) return;
  pieces_.clear();
  in_write_.clear();
  if (!head_.empty()) pieces_.push_back(net::buffer(head_));
  const std::size_t body_from = pieces_.size();
  frames_in_write_ = 0;
  encoded_.clear();
  // Everything queued goes out in one write (one syscall), skipping ids already sent.
  for (auto& batch : queue_) {
    queued_ -= batch->size();
    gather(batch);
    in_write_.push_back(std::move(batch));
  }
  queue_.clear();
  // Fell behind its run's shared encoding: cut, as a stalled stream is (its client resumes).
  if (encoder_lost_) return finish(end_reason::stalled);
  if (!encoded_.empty()) pieces_.push_back(net::buffer(encoded_));
  if (opts_.until_id && last_sent_ >= *opts_.until_id) reached_end_ = true;
  // Told to end: after what was queued, with the last chunk, like a run's end.
  if (closed_) reached_end_ = true;
  frame_body(body_from);
  if (pieces_.empty()) {
    if (reached_end_) return finish(closed_ ? end_reason::closed : end_reason::run_done);
    return;  // idle: the heartbeat wheel wakes it for heartbeats
  }
  writing_ = true;
  // Usually the socket takes frames all at once: then the write is done here, with no
  // operation queued and no completion to run (a paced stream writes one event at a
  // time). The response head's write stays asynchronous: done here it left ~0.08 KiB
  // more per idle subscription (measured with sseload idle; the order in which a new
  // stream's and its connection's blocks are freed changed).
  boost::system::error_code ec;
  const std::size_t taken = head_.empty() ? sse_detail::write_now(*socket_, pieces_, ec) : 0;
  if (ec || (taken > 0 && taken == net::buffer_size(pieces_))) return on_written(ec);
  write_started_ = wheel_.now();
  // Rare: a write timeout shorter than the heartbeat needs an earlier wake.
  if (wake_at_ > write_started_ + opts_.write_timeout) wake_at(write_started_ + opts_.write_timeout);
  // The rest when the client has read some: the pieces after what the socket took.
  boost::beast::buffers_suffix<std::vector<net::const_buffer>> rest(pieces_);
  rest.consume(taken);
  net::async_write(*socket_, rest,
                   [self = this->shared_from_this()](const boost::system::error_code& ec, std::size_t) { self->on_written(ec); });
}

template <class Stream>
void basic_sse_stream<Stream>::gather(const core::frame_batch& batch) {
  const std::size_t first_piece = pieces_.size();
  bool whole = !reached_end_;  // every frame of the batch goes out
  for (const auto& f : batch->frames) {
    if (reached_end_) {
      whole = false;
      break;
    }
    if (f->id >= 0) {
      if (f->id <= last_sent_) {
        whole = false;
        continue;
      }
      // A replay that ends at `until_id` ends there, even when later events (a run that
      // started meanwhile) came in the same batch.
      if (opts_.until_id && f->id > *opts_.until_id) {
        reached_end_ = true;
        whole = false;
        break;
      }
      last_sent_ = f->id;
      ++frames_in_write_;
    }
    if (opts_.encoder) {
      opts_.encoder->encode(*f, encoded_);  // one buffer for the write, added by write_more
      if (opts_.encoder->lost()) {
        encoder_lost_ = true;
        return;
      }
    } else
      pieces_.push_back(net::buffer(f->sse));
    if (f->id >= 0 && opts_.until_run && f->type == core::event_type::done && f->run_id() == *opts_.until_run)
      reached_end_ = true;
  }
  // The usual case: the batch's joined text, one buffer instead of one per frame.
  if (whole && !opts_.encoder && pieces_.size() > first_piece + 1) {
    pieces_.resize(first_piece);
    pieces_.push_back(net::buffer(batch->joined));
  }
}

template <class Stream>
void basic_sse_stream<Stream>::frame_body(std::size_t body_from) {
  std::size_t body = 0;
  for (std::size_t i = body_from; i < pieces_.size(); ++i) body += pieces_[i].size();
  if (chunked_ && body > 0) {
    pieces_.insert(pieces_.begin() + static_cast<std::ptrdiff_t>(body_from),
                   net::buffer(chunk_size_, sse_detail::chunk_size_line(chunk_size_, body)));
    pieces_.push_back(net::buffer(sse_detail::crlf, 2));
  }
  // The last chunk ends the response cleanly; the connection may then be reused.
  if (reached_end_ && chunked_) pieces_.push_back(net::buffer(sse_detail::last_chunk, 5));
}

template <class Stream>
void basic_sse_stream<Stream>::on_written(const boost::system::error_code& ec) {
  writing_ = false;
  head_.clear();
  head_.shrink_to_fit();
  in_write_.clear();
  if (ec || peer_gone_) return finish(stalled_ ? end_reason::stalled : end_reason::client_gone);
  last_write_ = wheel_.now();
  stats_.sse_frames_written += frames_in_write_;
  if (reached_end_) return finish(closed_ ? end_reason::closed : end_reason::run_done);
  write_more();
  notify_if_drained();
}

template <class Stream>
void basic_sse_stream<Stream>::on_due(std::shared_ptr<heartbeat_wheel::member> self) {
  // From the wheel's tick, on our io thread: this runs us right here (no handler queued,
  // no thread woken), ahead of takes already posted (a heartbeat before frames is fine).
  net::dispatch(executor_, [self = std::static_pointer_cast<basic_sse_stream>(std::move(self))] { self->on_timer(); });
}

template <class Stream>
void basic_sse_stream<Stream>::wake_at(core::steady_time at) {
  wake_at_ = at;
  wheel_.schedule(this->shared_from_this(), at);
}

template <class Stream>
void basic_sse_stream<Stream>::on_timer() {
  if (finished_) return;
  const auto now = wheel_.now();
  if (writing_) {
    // A client that stopped reading: cut the stalled write (a quiet client is never cut).
    if (now - write_started_ >= opts_.write_timeout) {
      stalled_ = true;
      stats_.sse_slow_subscribers_dropped++;
      sse_detail::cancel_write(*socket_);
      // The cut write's failure ends the stream; should it have completed just before
      // the cut, the stream goes on and still needs its wakes.
      wake_at(now + opts_.heartbeat);
      return;
    }
    // A heartbeat is not due while a write is in flight: only the write's deadline.
    wake_at(write_started_ + opts_.write_timeout);
    return;
  }
  // Written meanwhile: look again a heartbeat after that write.
  if (now - last_write_ < opts_.heartbeat) return wake_at(last_write_ + opts_.heartbeat);
  write_heartbeat(now);
}

template <class Stream>
void basic_sse_stream<Stream>::write_heartbeat(core::steady_time now) {
  // Silent for a heartbeat interval: keep proxies from cutting an idle stream. Nothing is
  // in flight, so one non-blocking write says it: one syscall, no completion to queue.
  const std::string_view beat = sse_detail::heartbeat_bytes(chunked_);
  boost::system::error_code ec;
  const std::size_t taken = sse_detail::write_now(*socket_, net::buffer(beat.data(), beat.size()), ec);
  if (ec) return finish(end_reason::client_gone);
  wake_at(now + opts_.heartbeat);
  if (taken == beat.size()) {
    last_write_ = now;
    return;
  }
  // The send buffer is full (a client that reads slowly): the rest goes through the write
  // loop, ahead of any frame, under the write timeout.
  head_.assign(beat.substr(taken));
  write_more();
}

template <class Stream>
void basic_sse_stream<Stream>::finish(end_reason why) {
  if (finished_) return;
  finished_ = true;
  writing_ = false;
  wheel_.cancel(*this);
  queue_.clear();
  in_write_.clear();
  drained_ = nullptr;
  stats_.sse_streams_open--;
  if constexpr (sse_detail::can_watch_peer<Stream>) {
    boost::system::error_code ignored;
    socket_->cancel(ignored);  // the peer watch: the socket may serve the next request
  }
  const bool reusable = why == end_reason::run_done && chunked_;
  auto on_end = std::move(on_end_);
  on_end_ = nullptr;
  auto socket = std::move(*socket_);
  socket_.reset();
  if (on_end) on_end(this->shared_from_this(), why, std::move(socket), reusable);
}

}  // namespace agw::gateway
