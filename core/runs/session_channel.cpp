#include "core/runs/session_channel.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>

#include "core/events/log_codec.hpp"
#include "core/events/sse_format.hpp"
#include "core/runs/run.hpp"
#include "core/time_format.hpp"

namespace agw::core {

namespace net = boost::asio;

session_channel::session_channel(io_executor executor, std::string session_id, std::int64_t last_event_id,
                                 const channel_services& services, options opts)
    : strand_(executor),
      session_id_(std::move(session_id)),
      store_(services.store),
      log_(services.log),
      stats_(services.stats),
      fanout_(services.fanout),
      opts_(opts),
      next_id_(last_event_id + 1),
      pipeline_(strand_, session_id_, services.log,
                {opts.max_batch, opts.high_watermark, opts.retention, &services.stats.event_commit_wait_seconds, opts.thread_id},
                *this, last_event_id),
      ring_(opts.ring_size),
      cursors_(*this, services.stats, opts.replay_page, opts.subscriber_backlog) {
  snapshot_last_id_.store(last_event_id);
  note_quiet();
}

std::int64_t session_channel::publish(std::string_view run_id, event_type type, const boost::json::object& data,
                                      event_source source) {
  const std::int64_t id = next_id_++;
  if (closed_) return id;  // the session is gone: nothing to store or deliver
  pipeline_.push(std::make_shared<const event_frame>(make_event_frame(id, type, run_id, data, source)));
  return id;
}

std::int64_t session_channel::publish(std::string_view run_id, event_type type, std::string_view key, std::string_view value,
                                      event_source source) {
  const std::int64_t id = next_id_++;
  if (closed_) return id;
  pipeline_.push(std::make_shared<const event_frame>(make_event_frame(id, type, run_id, key, value, source)));
  return id;
}

std::int64_t session_channel::publish_outside_run(event_type type, event_source source, const boost::json::object& data) {
  const std::int64_t id = next_id_++;
  if (closed_) return id;
  boost::json::object whole;
  whole.reserve(data.size() + 2);
  whole["run_id"] = nullptr;
  whole["source"] = name_of(source);
  for (const auto& member : data) whole.emplace(member.key(), member.value());
  pipeline_.push(std::make_shared<const event_frame>(make_event_frame_with_data(id, type, boost::json::serialize(whole))));
  return id;
}

void session_channel::released(const std::vector<frame_ptr>& batch) {
  for (const auto& f : batch) {
    ring_.push(f);
    stats_.count_event(f->type);
  }
  stats_.events_published += batch.size();
  stats_.event_batches_committed++;
  // A run is over when its done is durable: clear it before anyone sees the done,
  // so a client that answers done with its next message never meets a 409.
  bool run_ended = false;
  if (run_)
    for (const auto& f : batch)
      if (f->type == event_type::done && f->run_id() == run_->id()) {
        run_.reset();
        run_ended = true;
        pipeline_.set_fence(0);  // events after the run's done are of no run
        break;
      }
  snapshot_last_id_.store(pipeline_.committed_id());
  if (run_ended) publish_snapshot();
  // The other nodes' followers (a cluster): only what the log holds, so not the last
  // events of a session being deleted, which are released unstored.
  if (fanout_ && !deleting_ && !batch.empty()) fanout_->publish(session_id_, batch.back()->id, batch);
  cursors_.deliver(batch);
  if (run_ended) wake_idle_waiters();
  if (deleting_ && !run_) return close_now();
  release_ring_if_idle();
}

std::chrono::steady_clock::duration session_channel::release_spacing() const {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(opts_.release_spacing_per_subscriber *
                                                                         static_cast<std::int64_t>(cursors_.size()));
}

bool session_channel::follow_log(std::int64_t last_id, std::vector<frame_ptr> frames) {
  const std::int64_t held = committed_id();
  // Events of our own on their way: this node writes the session now.
  if (closed_ || last_id <= held || !pipeline_.idle() || last_assigned_id() > held) return false;
  std::erase_if(frames, [held](const frame_ptr& f) { return f->id <= held; });
  bool consecutive = !frames.empty() && frames.front()->id == held + 1 && frames.back()->id == last_id;
  for (std::size_t i = 1; consecutive && i < frames.size(); ++i) consecutive = frames[i]->id == frames[i - 1]->id + 1;
  pipeline_.adopt(last_id);
  next_id_ = last_id + 1;
  snapshot_last_id_.store(last_id);
  stats_.events_followed += static_cast<std::uint64_t>(last_id - held);
  if (consecutive) {
    for (const auto& f : frames) ring_.push(f);
    cursors_.deliver(frames, true);
  } else {
    // The ring must end at the committed id with no hole: start it again, and let the
    // live subscribers read what they miss from the log.
    ring_.clear();
    cursors_.resync();
  }
  release_ring_if_idle();
  return true;
}

net::awaitable<void> session_channel::follow_log_end() {
  auto read = [session = session_id_](store_connection& c) {
    auto s = c.find_session(session);
    return s ? s->last_event_id : std::int64_t{0};
  };
  std::int64_t last = 0;
  try {
    last = co_await store_.async_read(std::move(read), net::use_awaitable);
  } catch (const std::exception&) {
    co_return;  // the caller decides as if nothing were newer
  }
  follow_log(last);
}

void session_channel::follow_news(std::int64_t last_id, std::vector<frame_ptr> frames) {
  if (closed_ || last_id <= committed_id()) return;
  // Frames that follow on are the events themselves (decoded consecutive from their first id).
  if (!frames.empty() && frames.front()->id <= committed_id() + 1 && frames.back()->id == last_id) {
    follow_log(last_id, std::move(frames));
    return;
  }
  // Only news of a later end (a lost message, an empty one): the store says where the log
  // ends, so that no message moves the sequence past what is written.
  net::co_spawn(strand_, follow_log_end(), net::detached);
}

net::awaitable<void> session_channel::wait_committed() {
  auto waiting = pipeline_.wait_committed(last_assigned_id());
  co_await std::move(waiting);
}

void session_channel::subscribe(std::shared_ptr<subscriber> sub, std::int64_t after_id,
                                std::function<void(const replay_info&)> on_replay) {
  if (closed_) {
    sub->close(subscriber::close_reason::session_deleted);
    return;
  }
  cursors_.add(std::move(sub), after_id, std::move(on_replay));
  note_quiet();
}

void session_channel::read_log(std::int64_t after_id, std::size_t limit, log_page_handler done) {
  auto read = [session = session_id_, after_id, limit](store_connection& c) {
    std::pair<std::int64_t, std::vector<frame_ptr>> out;
    out.first = c.oldest_event_id(session);
    out.second = c.events_after(session, after_id, limit);
    return out;
  };
  auto on_read = [self = shared_from_this(), done = std::move(done)](std::exception_ptr error,
                                                                     std::pair<std::int64_t, std::vector<frame_ptr>> page) {
    if (!self->closed_) done(error, page.first, std::move(page.second));
  };
  store_.async_read(std::move(read), net::bind_executor(strand_, std::move(on_read)));
}

void session_channel::defer(std::function<void()> step) {
  net::post(strand_, [self = shared_from_this(), step = std::move(step)] {
    if (!self->closed_) step();
  });
}

std::shared_ptr<const void> session_channel::keep_alive() { return shared_from_this(); }

net::awaitable<std::vector<frame_ptr>> session_channel::read_after(std::int64_t after_id, std::size_t limit) {
  std::vector<frame_ptr> out;
  if (!ring_.holds_all_after(after_id, committed_id())) {
    // The log first, up to what the ring holds (retention may have cut the log's start).
    const std::int64_t upto = ring_.log_upto(committed_id());
    const std::size_t want = std::min(limit, static_cast<std::size_t>(std::max<std::int64_t>(upto - after_id, 0)));
    stats_.replay_reads_log++;
    auto read = [session = session_id_, after_id, want](store_connection& c) { return c.events_after(session, after_id, want); };
    out = co_await store_.async_read(std::move(read), net::use_awaitable);
  }
  const std::int64_t last = out.empty() ? after_id : out.back()->id;
  if (out.size() < limit && ring_.holds_all_after(last, committed_id()) && (stats_.replay_reads_ring++, true))
    for (auto& f : ring_.after(last)) {
      if (out.size() >= limit) break;
      out.push_back(std::move(f));
    }
  co_return out;
}

std::int64_t session_channel::oldest_held() const {
  // Nothing released yet, but ids assigned: the store may already show the first batch
  // (its commit reaches this strand a moment later), and a cursor taken from it is valid.
  if (committed_id() == 0) return last_assigned_id() > 0 ? 1 : 0;
  if (opts_.retention == 0) return 1;
  return std::max<std::int64_t>(1, committed_id() - static_cast<std::int64_t>(opts_.retention) + 1);
}

void session_channel::unsubscribe(const subscriber* sub) {
  cursors_.remove(sub);
  release_ring_if_idle();
}

void session_channel::release_ring_if_idle() {
  // An idle session keeps no frames in memory: a later resume reads the log instead.
  // (Thousands of finished sessions would otherwise each hold a full ring.)
  if (!run_ && cursors_.empty() && pipeline_.idle()) ring_.clear();
  note_quiet();
}

void session_channel::note_quiet() {
  const bool quiet = closed_ || (!run_ && cursors_.empty() && pipeline_.idle());
  if (!quiet) {
    quiet_since_ms_.store(0, std::memory_order_relaxed);
    return;
  }
  // Each change while quiet starts the count again: a commit of an event of no run, an
  // unsubscribe, are activity.
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  // Never 0 (that means busy), even on a clock that started at 0.
  quiet_since_ms_.store(std::max<std::int64_t>(1, std::chrono::duration_cast<std::chrono::milliseconds>(now).count()),
                        std::memory_order_relaxed);
}

bool session_channel::evictable() const {
  if (closed_) return true;  // nothing happens on it again
  return !deleting_ && !run_ && cursors_.empty() && pipeline_.idle() && !pipeline_.fenced() &&
         last_assigned_id() == committed_id() && !queue_waiting() && !queue_starting_ && idle_waiters_.empty();
}

void session_channel::fence_out() {
  if (pipeline_.fenced()) return;
  pipeline_.fence_out();
  on_fenced_out();
}

void session_channel::on_fenced_out() {
  stats_.runs_fenced_out++;
  if (run_) {
    spdlog::warn("session {}: run {} lost its lease to another node; it stops without writing more", session_id_, run_->id());
    run_->request_abort();
  } else {
    follow_after_fence();
  }
}

void session_channel::follow_after_fence() {
  if (!pipeline_.fenced() || closed_) return;
  auto read = [session = session_id_](store_connection& c) {
    auto s = c.find_session(session);
    return s ? s->last_event_id : std::int64_t{0};
  };
  auto on_read = [self = shared_from_this()](std::exception_ptr error, std::int64_t last_id) {
    if (self->closed_ || !self->pipeline_.fenced() || self->run_) return;
    if (error || !self->pipeline_.idle()) {
      // A batch still in flight (or the read failed): look again shortly.
      auto timer = std::make_shared<net::steady_timer>(self->strand_, std::chrono::milliseconds(100));
      timer->async_wait([self, timer](const boost::system::error_code&) { self->follow_after_fence(); });
      return;
    }
    self->pipeline_.unfence();
    self->next_id_ = self->committed_id() + 1;  // the dropped events' ids were never committed here
    self->follow_log(last_id);
  };
  store_.async_read(std::move(read), net::bind_executor(strand_, std::move(on_read)));
}

void session_channel::set_live_run(std::shared_ptr<run> r) {
  run_ = std::move(r);
  if (!run_) pipeline_.set_fence(0);
  if (!run_ && pipeline_.fenced()) follow_after_fence();
  publish_snapshot();
  note_quiet();
  if (!run_) wake_idle_waiters();
  // Deleted while a run was only reserved (it never published): nothing else will close us.
  if (!run_ && deleting_ && pipeline_.idle()) close_now();
}

void session_channel::close() {
  if (closed_ || deleting_) return;
  if (run_ && run_->request_abort()) {
    // Let the live run end with its aborted done, delivered but not stored; then close.
    deleting_ = true;
    pipeline_.store_nothing();
    return;
  }
  close_now();
}

net::awaitable<void> session_channel::wait_idle() {
  if (!run_ || closed_) co_return;
  // The handler is move-only; the waiter list holds it in a shared_ptr and posts it back.
  auto park = [this](auto handler) {
    auto held = std::make_shared<decltype(handler)>(std::move(handler));
    idle_waiters_.push_back([held] {
      auto ex = net::get_associated_executor(*held);
      net::post(ex, [held] { std::move (*held)(); });
    });
  };
  auto waiting = net::async_initiate<decltype(net::use_awaitable), void()>(park, net::use_awaitable);
  co_await std::move(waiting);
}

void session_channel::wake_idle_waiters() {
  auto waiters = std::move(idle_waiters_);
  idle_waiters_.clear();
  for (auto& wake : waiters) wake();
}

void session_channel::close_now() {
  closed_ = true;
  wake_idle_waiters();
  pipeline_.close();
  ring_.clear();
  // The writer forgot the session when it was deleted (session_hub::session_deleted): not
  // by id here, where a session made again with the same id may have a channel already.
  cursors_.close_all();
  note_quiet();
}

void session_channel::close_subscribers() {
  // Subscribers that finish with their run stay subscribed and end by themselves.
  cursors_.drain_all();
}

void session_channel::publish_snapshot() {
  std::lock_guard lock(snapshot_mutex_);
  snapshot_run_ = run_ ? std::optional<run_summary>(run_->summary()) : std::nullopt;
}

session_channel::snapshot_view session_channel::snapshot() const {
  snapshot_view out;
  {
    std::lock_guard lock(snapshot_mutex_);
    out.run = snapshot_run_;
  }
  out.last_event_id = snapshot_last_id_.load();
  return out;
}

}  // namespace agw::core
