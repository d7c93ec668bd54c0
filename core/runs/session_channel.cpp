#include "core/runs/session_channel.hpp"

#include <algorithm>
#include <random>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "core/events/log_codec.hpp"
#include "core/events/sse_format.hpp"
#include "core/runs/run.hpp"
#include "core/time_format.hpp"

namespace agw::core {

namespace net = boost::asio;

namespace {

// Events read back from the log, as frames like the ones published.
std::vector<frame_ptr> frames_of(std::vector<stored_event> stored) {
  std::vector<frame_ptr> out;
  out.reserve(stored.size());
  for (auto& e : stored) out.push_back(std::make_shared<const event_frame>(std::move(e.frame)));
  return out;
}

}  // namespace

session_channel::session_channel(io_executor executor, std::string session_id, std::int64_t last_event_id,
                                 const channel_services& services, options opts)
    : strand_(net::make_strand(executor)),
      session_id_(std::move(session_id)),
      store_(services.store),
      appender_(services.appender),
      stats_(services.stats),
      opts_(opts),
      next_id_(last_event_id + 1),
      committed_id_(last_event_id),
      closed_(opts.deleted),
      ring_(opts.ring_size),
      claim_(services.claims.make_claim()),
      segment_timer_(strand_) {
  snapshot_last_id_.store(last_event_id);
}

std::int64_t session_channel::publish(std::string_view run_id, std::string_view type, const boost::json::object& data) {
  const std::int64_t id = next_id_++;
  if (closed_) return id;  // the session is gone: nothing to store or deliver
  pending_.push_back(std::make_shared<const event_frame>(make_event_frame(id, type, run_id, data)));
  flush();
  return id;
}

std::int64_t session_channel::publish(std::string_view run_id, std::string_view type, std::string_view key,
                                      std::string_view value) {
  const std::int64_t id = next_id_++;
  if (closed_) return id;
  pending_.push_back(std::make_shared<const event_frame>(make_event_frame(id, type, run_id, key, value)));
  flush();
  return id;
}

void session_channel::flush() {
  if (in_flight_ || closed_) return;
  const bool segment_now = segment_due_ && !unsegmented_.empty();
  if (pending_.empty() && !segment_now) return;
  in_flight_ = true;
  // A bounded batch: one log row and one delivery per subscriber stay small, and
  // the rest commits right behind it.
  const std::size_t take = std::min(pending_.size(), opts_.max_batch);
  auto batch = std::make_shared<std::vector<frame_ptr>>(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(take));
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(take));
  in_flight_count_ = batch->size();
  if (deleting_) {
    // The session's rows are gone: the run's last events go to its followers only.
    net::post(strand_, [self = shared_from_this(), batch] { self->on_committed(batch, nullptr, true); });
    return;
  }
  // A segment when the journaled tail is big or old enough, or the run ends (an idle
  // session then holds nothing journal-only); otherwise one cheap journal append.
  const bool ends_run = std::any_of(batch->begin(), batch->end(), [](const frame_ptr& f) { return f->type() == "done"; });
  const bool as_segment = segment_now || ends_run || unsegmented_.size() + batch->size() >= opts_.segment_frames;
  event_batch_record record;
  record.session_id = session_id_;
  record.created_at_ms = now_ms();
  // The stored form (log_codec): about a quarter of the frames' text.
  std::size_t bytes = 0;
  auto add_frames = [&](const std::vector<frame_ptr>& frames) {
    if (frames.empty()) return;
    if (record.frames.empty()) record.first_id = frames.front()->id;
    record.last_id = frames.back()->id;
    encode_log_frames(frames, record.frames);
  };
  for (const auto& f : *batch) bytes += f->text.size() / 2;
  if (as_segment)
    for (const auto& f : unsegmented_) bytes += f->text.size() / 2;
  record.frames.reserve(bytes);
  if (as_segment) add_frames(unsegmented_);
  add_frames(*batch);
  // Written with every other session's batches of this writer cycle; a journal row's claim
  // is taken inside the job, on the writer, before its commit (journal_claims.hpp).
  appender_.append({std::move(record), as_segment, opts_.retention, claim_, strand_,
                    [self = shared_from_this(), batch, as_segment](std::exception_ptr error) {
                      self->on_committed(batch, error, as_segment);
                    }});
}

void session_channel::on_committed(const std::shared_ptr<std::vector<frame_ptr>>& batch, std::exception_ptr error,
                                   bool as_segment) {
  in_flight_ = false;
  in_flight_count_ = 0;
  if (closed_) return;
  if (error) {
    // Storage refused the batch: keep its frames (ids stay assigned, nothing was
    // released) and retry after a pause; the run waits at the watermark meanwhile.
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      spdlog::error("session {}: event batch of {} events not committed: {}; retrying", session_id_, batch->size(), e.what());
    }
    pending_.insert(pending_.begin(), batch->begin(), batch->end());
    auto timer = std::make_shared<net::steady_timer>(strand_, std::chrono::milliseconds(200));
    in_flight_ = true;  // hold further flushes until the retry
    timer->async_wait([self = shared_from_this(), timer](const boost::system::error_code&) {
      self->in_flight_ = false;
      self->flush();
    });
    return;
  }
  if (as_segment) {
    // Every journaled frame of the session is in a segment now: the journal may drop them.
    unsegmented_.clear();
    segment_due_ = false;
    claim_->release();
    segment_timer_.cancel();
  } else {
    if (unsegmented_.empty() && opts_.segment_age.count() > 0) arm_segment_timer();
    unsegmented_.insert(unsegmented_.end(), batch->begin(), batch->end());
  }
  if (batch->empty()) {
    // A segment of what was journaled already: nothing new to release.
    flush();
    release_ring_if_idle();
    return;
  }
  committed_id_ = batch->back()->id;
  for (const auto& f : *batch) ring_.push(f);
  stats_.events_published += batch->size();
  stats_.event_batches_committed++;
  // A run is over when its done is durable: clear it before anyone sees the done,
  // so a client that answers done with its next message never meets a 409.
  bool run_ended = false;
  if (run_)
    for (const auto& f : *batch)
      if (f->type() == "done" && f->run_id() == run_->id()) {
        run_.reset();
        run_ended = true;
        break;
      }
  snapshot_last_id_.store(committed_id_);
  if (run_ended) publish_snapshot();
  deliver_live(*batch);
  wake(commit_waiters_);
  if (deleting_ && !run_) {
    close_now();
    return;
  }
  flush();
  release_ring_if_idle();
  if (pending_.size() < opts_.high_watermark) wake(watermark_waiters_);
}

void session_channel::arm_segment_timer() {
  // Somewhere in [age/2, age]: sessions that started together (a burst of runs) must not
  // all write their segments in the same writer cycle, which would stall every commit.
  thread_local std::minstd_rand jitter(std::random_device{}());
  const auto half = opts_.segment_age / 2;
  segment_timer_.expires_after(half + std::chrono::milliseconds(jitter() % (half.count() + 1)));
  segment_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->closed_ || self->unsegmented_.empty()) return;
    self->segment_due_ = true;
    self->flush();
  });
}

void session_channel::deliver_live(const std::vector<frame_ptr>& frames) {
  // No copy of the list: deliver() never calls back into the channel (subscriber.hpp).
  frame_batch group;
  for (const auto& s : subscribers_) {
    if (s.catching_up) continue;
    if (!group) group = make_frame_batch(frames);  // joined once, for all of them
    s.sub->deliver(group);
  }
}

void session_channel::wake(std::vector<std::shared_ptr<net::steady_timer>>& waiters) {
  auto woken = std::move(waiters);
  waiters.clear();
  for (auto& t : woken) t->cancel();
}

net::awaitable<void> session_channel::wait_committed() {
  const std::int64_t target = last_assigned_id();
  while (committed_id_ < target && !closed_) {
    auto timer = std::make_shared<net::steady_timer>(strand_, net::steady_timer::time_point::max());
    commit_waiters_.push_back(timer);
    co_await timer->async_wait(net::as_tuple(net::use_awaitable));
  }
}

net::awaitable<void> session_channel::wait_below_watermark() {
  while (pending_.size() + in_flight_count_ >= opts_.high_watermark && !closed_) {
    auto timer = std::make_shared<net::steady_timer>(strand_, net::steady_timer::time_point::max());
    watermark_waiters_.push_back(timer);
    co_await timer->async_wait(net::as_tuple(net::use_awaitable));
  }
}

void session_channel::subscribe(std::shared_ptr<subscriber> sub, std::int64_t after_id,
                                std::function<void(const replay_info&)> on_replay) {
  if (closed_) {
    sub->close(subscriber::close_reason::session_deleted);
    return;
  }
  replay_info info;
  info.last_event_id = after_id;
  if (memory_holds_all_after(after_id)) {
    subscribers_.push_back({sub, false});
    auto frames = memory_after(after_id);
    info.replayed = static_cast<std::int64_t>(frames.size());
    info.oldest_event_id = oldest_held();
    if (on_replay) on_replay(info);
    if (!frames.empty()) sub->deliver(make_frame_batch(std::move(frames)));
    return;
  }
  // Older than the ring: read the log first; live frames reach this subscriber from
  // the ring once the replay has caught up, so none is missed or reordered.
  subscribers_.push_back({sub, true});
  continue_replay(std::move(sub), after_id, info, std::move(on_replay));
}

void session_channel::continue_replay(std::shared_ptr<subscriber> sub, std::int64_t after_id, replay_info info,
                                      std::function<void(const replay_info&)> on_replay) {
  const std::int64_t upto = memory_oldest() ? memory_oldest() - 1 : committed_id_;
  auto read = [session = session_id_, after_id, upto, page = opts_.replay_page](store_connection& c) {
    std::pair<std::int64_t, std::vector<stored_event>> out;
    out.first = c.oldest_event_id(session);
    auto limit = std::min(static_cast<std::size_t>(std::max<std::int64_t>(upto - after_id, 0)), page);
    out.second = c.events_after(session, after_id, limit);
    return out;
  };
  store_.async_read(std::move(read),
                    net::bind_executor(strand_, [self = shared_from_this(), sub, after_id, info, on_replay](
                                                    std::exception_ptr error, std::pair<std::int64_t, std::vector<stored_event>> result) mutable {
                      if (self->closed_) return;
                      // The client left during the read: stop paging through the log for it.
                      if (!self->is_subscribed(sub)) return;
                      if (error) {
                        // Without the log the replay cannot be complete: end the stream, the client retries.
                        self->unsubscribe(sub.get());
                        sub->close(subscriber::close_reason::draining);
                        return;
                      }
                      auto frames = frames_of(std::move(result.second));
                      // What memory holds is served from memory (retention may keep less in the log).
                      const std::int64_t in_memory = self->memory_oldest();
                      if (in_memory) std::erase_if(frames, [&](const frame_ptr& f) { return f->id >= in_memory; });
                      info.oldest_event_id = result.first && (!in_memory || result.first < in_memory) ? result.first : in_memory;
                      // A gap: retention removed events right after the cursor.
                      const std::int64_t first_held =
                          !frames.empty() ? frames.front()->id : (in_memory ? in_memory : self->committed_id_ + 1);
                      if (first_held > after_id + 1) info.gap = true;
                      // Nothing in the log after the cursor: go on from just before the first event held.
                      std::int64_t last = frames.empty() ? std::max(after_id, first_held - 1) : frames.back()->id;
                      if (on_replay) {
                        // `reconnected` goes first: it counts what is committed now, from the first event held.
                        info.replayed = std::max<std::int64_t>(0, self->committed_id_ - first_held + 1);
                        on_replay(info);
                        on_replay = nullptr;
                      }
                      if (!frames.empty()) sub->deliver(make_frame_batch(std::move(frames)));
                      if (!self->memory_holds_all_after(last)) {
                        // More than a page, or the ring moved on while we read: read the next page,
                        // once the subscriber has taken all but a page (the replay goes at the
                        // reader's pace; it is not a backlog that should cut it as too slow).
                        auto next = [self, sub, last, info] { self->continue_replay(sub, last, info, nullptr); };
                        self->when_taken(sub, self->opts_.replay_page, std::move(next));
                        return;
                      }
                      self->finish_replay(sub, last);
                    }));
}

void session_channel::finish_replay(const std::shared_ptr<subscriber>& sub, std::int64_t last_sent) {
  if (sub->backlog() > 0) {
    // The log page just delivered is not taken yet: the ring tail on top of it would count
    // as a slow subscriber's backlog (page + tail > queue) and cut a client reading at full
    // speed. Hand the tail over once the writer has taken the page; the ring may move on
    // meanwhile (live frames still skip this subscriber), so look again then.
    auto next = [self = shared_from_this(), sub, last_sent] {
      if (self->memory_holds_all_after(last_sent)) self->finish_replay(sub, last_sent);
      else self->continue_replay(sub, last_sent, replay_info{}, nullptr);
    };
    when_taken(sub, 0, std::move(next));
    return;
  }
  auto tail = memory_after(last_sent);
  if (!tail.empty()) sub->deliver(make_frame_batch(std::move(tail)));
  // From here on the subscriber takes live frames like every other.
  for (auto& s : subscribers_)
    if (s.sub == sub) s.catching_up = false;
}

void session_channel::when_taken(const std::shared_ptr<subscriber>& sub, std::size_t allowed, std::function<void()> next,
                                 std::chrono::milliseconds pause) {
  if (sub->backlog() <= allowed) {
    next();
    return;
  }
  // Polled: the subscriber's writer runs on its own strand. 1 ms, then backing off to 32 ms
  // for a reader that is really slow (its stalled write times out and unsubscribes it).
  auto timer = std::make_shared<net::steady_timer>(strand_, pause);
  timer->async_wait([self = shared_from_this(), timer, sub, allowed, next = std::move(next), pause](const boost::system::error_code&) mutable {
    if (self->closed_ || !self->is_subscribed(sub)) return;
    self->when_taken(sub, allowed, std::move(next), std::min(pause * 2, std::chrono::milliseconds(32)));
  });
}

bool session_channel::is_subscribed(const std::shared_ptr<subscriber>& sub) const {
  return std::any_of(subscribers_.begin(), subscribers_.end(), [&](const subscription& s) { return s.sub == sub; });
}

std::int64_t session_channel::memory_oldest() const {
  const std::int64_t ring = ring_.size() ? ring_.oldest_id() : 0;
  const std::int64_t tail = unsegmented_.empty() ? 0 : unsegmented_.front()->id;
  if (!ring || !tail) return ring ? ring : tail;
  return std::min(ring, tail);
}

bool session_channel::memory_holds_all_after(std::int64_t after_id) const {
  // Both the ring and the unsegmented tail end at the last committed frame.
  const std::int64_t oldest = memory_oldest();
  return after_id >= committed_id_ || (oldest && oldest <= after_id + 1);
}

std::vector<frame_ptr> session_channel::memory_after(std::int64_t after_id) const {
  if (unsegmented_.empty() || (ring_.size() && ring_.oldest_id() <= unsegmented_.front()->id)) return ring_.after(after_id);
  // Ids are consecutive in the tail, so the start is computed, not searched.
  const std::int64_t skip = after_id + 1 - unsegmented_.front()->id;
  const std::size_t start = skip > 0 ? static_cast<std::size_t>(skip) : 0;
  if (start >= unsegmented_.size()) return {};
  return {unsegmented_.begin() + static_cast<std::ptrdiff_t>(start), unsegmented_.end()};
}

net::awaitable<std::vector<frame_ptr>> session_channel::read_after(std::int64_t after_id, std::size_t limit) {
  std::vector<frame_ptr> out;
  if (!memory_holds_all_after(after_id)) {
    // The log first, up to what memory holds (retention may have cut the log's start).
    const std::int64_t upto = memory_oldest() ? memory_oldest() - 1 : committed_id_;
    const std::size_t want = std::min(limit, static_cast<std::size_t>(std::max<std::int64_t>(upto - after_id, 0)));
    auto read = [session = session_id_, after_id, want](store_connection& c) { return c.events_after(session, after_id, want); };
    auto stored = co_await store_.async_read(std::move(read), net::use_awaitable);
    out = frames_of(std::move(stored));
  }
  const std::int64_t last = out.empty() ? after_id : out.back()->id;
  if (out.size() < limit && memory_holds_all_after(last))
    for (auto& f : memory_after(last)) {
      if (out.size() >= limit) break;
      out.push_back(std::move(f));
    }
  co_return out;
}

std::int64_t session_channel::oldest_held() const {
  if (committed_id_ == 0) return 0;
  if (opts_.retention == 0) return 1;
  // Retention trims whole batches, so the log may hold a little more than this.
  return std::max<std::int64_t>(1, committed_id_ - static_cast<std::int64_t>(opts_.retention) + 1);
}

void session_channel::unsubscribe(const subscriber* sub) {
  std::erase_if(subscribers_, [sub](const subscription& s) { return s.sub.get() == sub; });
  release_ring_if_idle();
}

void session_channel::release_ring_if_idle() {
  // An idle session keeps no frames in memory: a later resume reads the log instead.
  // (Thousands of finished sessions would otherwise each hold a full ring.)
  if (!run_ && subscribers_.empty() && pending_.empty() && !in_flight_ && unsegmented_.empty()) ring_.clear();
}

void session_channel::set_live_run(std::shared_ptr<run> r) {
  run_ = std::move(r);
  publish_snapshot();
  // Deleted while a run was only reserved (it never published): nothing else will close us.
  if (!run_ && deleting_ && pending_.empty() && !in_flight_) close_now();
}

void session_channel::close() {
  if (closed_ || deleting_) return;
  if (run_ && run_->request_abort()) {
    // Let the live run end with its aborted done, delivered but not stored; then close.
    deleting_ = true;
    return;
  }
  close_now();
}

void session_channel::close_now() {
  closed_ = true;
  pending_.clear();
  unsegmented_.clear();
  claim_->release();
  segment_timer_.cancel();
  auto subs = std::move(subscribers_);
  subscribers_.clear();
  for (auto& s : subs) s.sub->close(subscriber::close_reason::session_deleted);
  wake(commit_waiters_);
  wake(watermark_waiters_);
}

void session_channel::close_subscribers() {
  // Subscribers that finish with their run stay subscribed and end by themselves.
  for (auto& s : subscribers_) s.sub->close(subscriber::close_reason::draining);
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
