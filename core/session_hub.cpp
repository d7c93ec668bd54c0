#include "core/session_hub.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>

#include "core/api_error.hpp"

namespace agw::core {

namespace net = boost::asio;

session_hub::session_hub(placement place, store_executor& store, event_log_writer& log, metrics& stats, const settings& config,
                         tool_runner& tools)
    : place_(std::move(place)),
      store_(store),
      stats_(stats),
      services_{store, log, stats},
      config_(config),
      tools_(tools),
      providers_(builtin_provider_registry()) {}

session_hub::session_hub(io_executor executor, store_executor& store, event_log_writer& log, metrics& stats,
                         const settings& config, tool_runner& tools)
    : session_hub([executor] { return executor; }, store, log, stats, config, tools) {}

namespace {
std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

std::shared_ptr<session_channel> session_hub::channel(const session_record& session) {
  return channel(session.id, session.thread_id, session.last_event_id, session.read_epoch);
}

std::shared_ptr<session_channel> session_hub::channel(const std::string& session_id, std::int64_t last_event_id) {
  return channel(session_id, {}, last_event_id, 0);
}

std::shared_ptr<session_channel> session_hub::channel(const std::string& session_id, const std::string& thread_id,
                                                      std::int64_t last_event_id, std::uint64_t read_epoch) {
  std::lock_guard lock(mutex_);
  // A session is one incarnation of its id, told by its thread id (empty: tests, matching any).
  auto same = [&thread_id](const std::string& other) { return thread_id.empty() || other.empty() || other == thread_id; };
  auto d = drops_.find(session_id);
  if (d != drops_.end()) {
    // The session read is gone: answered as if the request had come a moment later, even
    // when a session made again with its id has a channel already.
    for (const auto& gone : d->second.deleted_threads)
      if (same(gone)) throw api_error(error_code::not_found, "no such session");
  }
  if (auto it = channels_.find(session_id); it != channels_.end()) {
    if (same(it->second->thread_id())) return it->second;
    // The channel is of the session this id named before: deleted, its rows gone, and the
    // hub not told yet (session_deleted comes right after the delete's commit).
    throw api_error(error_code::unavailable, "the session is being replaced; try again");
  }
  if (read_epoch < forgotten_epoch_) {
    // A drop after the read began is no longer remembered, and it may have been this
    // session's (a deletion, or an eviction after which its last id moved on). Reading
    // again is exact.
    throw api_error(error_code::unavailable, "the session changed while it was being read; try again");
  }
  // Only an eviction after the read began, of the same session, can have moved what it saw.
  if (d != drops_.end() && d->second.evicted_epoch > read_epoch && same(d->second.evicted_thread))
    last_event_id = std::max(last_event_id, d->second.last_id);
  session_channel::options opts;
  opts.ring_size = config_.sse_buffer_size;
  opts.retention = config_.event_retention;
  opts.replay_page = std::max<std::size_t>(16, config_.sse_subscriber_queue / 4);
  opts.subscriber_backlog = config_.sse_subscriber_queue;
  opts.thread_id = thread_id;
  auto made = std::make_shared<session_channel>(place_(), session_id, last_event_id, services_, opts);
  channels_.emplace(session_id, made);
  stats_.channels_open++;
  return made;
}

std::shared_ptr<session_channel> session_hub::find(const std::string& session_id) const {
  std::lock_guard lock(mutex_);
  auto it = channels_.find(session_id);
  return it == channels_.end() ? nullptr : it->second;
}

session_hub::live_view session_hub::live_state(const std::string& session_id) const {
  auto c = find(session_id);
  return c ? c->snapshot() : live_view{};
}

void session_hub::session_deleted(const std::string& session_id, const std::string& thread_id) {
  std::shared_ptr<session_channel> c;
  {
    std::lock_guard lock(mutex_);
    remember_deletion(session_id, thread_id);
    auto it = channels_.find(session_id);
    // A session made again with this id between the delete's commit and this call may have
    // its channel already (channel() refuses to hand it the old one): that one, and the
    // writer state it opened, are not this deletion's.
    if (it != channels_.end() && !thread_id.empty() && !it->second->thread_id().empty() && it->second->thread_id() != thread_id)
      return;
    // Under the mutex, before a session made again with this id can have a channel: the old
    // channel (still closing, its run ending) keeps a log that writes nothing more, and a
    // new one opens its own. (No channel: an evicted one retired its state already.)
    services_.log.forget(session_id);
    if (it == channels_.end()) return;
    c = std::move(it->second);
    channels_.erase(it);
    stats_.channels_open--;
  }
  net::post(c->strand(), [c] { c->close(); });
}

std::uint64_t session_hub::epoch() const {
  std::lock_guard lock(mutex_);
  return epoch_;
}

std::size_t session_hub::channel_count() const {
  std::lock_guard lock(mutex_);
  return channels_.size();
}

void session_hub::evict_idle(std::chrono::milliseconds idle_for, std::size_t limit) {
  const std::int64_t now = steady_ms();
  std::vector<std::shared_ptr<session_channel>> quiet;
  {
    std::lock_guard lock(mutex_);
    forget_old_drops(now);
    // One pass over the map under the mutex, reading one atomic per channel. It starts
    // where the last one stopped taking candidates, so quiet channels that cannot go yet
    // (held, or with journal-only events) do not starve the others past `limit`.
    const std::size_t n = channels_.size();
    const std::size_t start = n == 0 ? 0 : sweep_from_ % n;
    std::size_t i = 0, next = start;
    for (int round = 0; round < 2 && quiet.size() < limit; ++round) {
      // Round 0: from `start` to the end; round 1: from the beginning to `start`.
      i = 0;
      for (const auto& [id, c] : channels_) {
        const std::size_t at = i++;
        if (round == 0 && at < start) continue;
        if (round == 1 && at >= start) break;
        const std::int64_t since = c->quiet_since_ms();
        if (since != 0 && now - since >= idle_for.count()) quiet.push_back(c);
        next = at + 1;
        if (quiet.size() >= limit) break;
      }
    }
    sweep_from_ = next;
  }
  for (auto& c : quiet) {
    auto& strand = c->strand();
    net::post(strand, [this, c = std::move(c)] { try_evict(c); });
  }
}

void session_hub::try_evict(const std::shared_ptr<session_channel>& c) {
  if (!c->evictable()) return;
  std::lock_guard lock(mutex_);
  auto it = channels_.find(c->session_id());
  // Held by nobody but the map and this call: no request, stream, run or completion can
  // reach it, and none can find it once it is out of the map (both under the mutex).
  if (it == channels_.end() || it->second != c || c.use_count() != 2) return;
  // Then the store: its events must all be where a read of the last id finds them.
  if (!services_.log.retire(c->session_id())) return;
  if (!c->closed()) remember_eviction(c->session_id(), c->thread_id(), c->last_committed_id());
  channels_.erase(it);
  stats_.channels_open--;
  stats_.channels_evicted++;
}

session_hub::drop& session_hub::next_drop(const std::string& session_id) {
  const std::int64_t now = steady_ms();
  forget_old_drops(now);  // here too: with eviction off, deletions alone must not pile up
  auto& d = drops_[session_id];
  d.epoch = ++epoch_;
  d.at_ms = now;
  drop_order_.emplace_back(session_id, d.epoch);
  return d;
}

void session_hub::remember_eviction(const std::string& session_id, const std::string& thread_id, std::int64_t last_id) {
  auto& d = next_drop(session_id);
  // The newest channel's: an older eviction was of the same session with a smaller last id,
  // or of one deleted since (its reads are answered not_found).
  d.evicted_thread = thread_id;
  d.last_id = last_id;
  d.evicted_epoch = d.epoch;
}

void session_hub::remember_deletion(const std::string& session_id, const std::string& thread_id) {
  auto& d = next_drop(session_id);
  d.deleted_threads.push_back(thread_id);
  d.deleted_epoch = d.epoch;
}

void session_hub::forget_old_drops(std::int64_t now_ms) {
  while (!drop_order_.empty()) {
    auto& [id, number] = drop_order_.front();
    auto d = drops_.find(id);
    if (d != drops_.end() && d->second.epoch == number) {
      if (now_ms - d->second.at_ms < drop_memory_.count()) break;
      forgotten_epoch_ = std::max(forgotten_epoch_, number);
      drops_.erase(d);
    }
    // Else a newer drop of the session replaced this one: it is remembered further on.
    drop_order_.pop_front();
  }
}

void session_hub::close_all_streams() {
  for (auto& c : all_channels()) net::post(c->strand(), [c] { c->close_subscribers(); });
}

void session_hub::close_idle_streams() {
  for (auto& c : all_channels())
    net::post(c->strand(), [c] {
      if (!c->live_run()) c->close_subscribers();
    });
}

std::vector<std::shared_ptr<session_channel>> session_hub::all_channels() const {
  std::vector<std::shared_ptr<session_channel>> all;
  std::lock_guard lock(mutex_);
  all.reserve(channels_.size());
  for (auto& [id, c] : channels_) all.push_back(c);
  return all;
}

void session_hub::committed_elsewhere(const std::string& session_id, std::int64_t last_id, std::vector<frame_ptr> frames) {
  auto c = find(session_id);
  if (!c) return;
  net::post(c->strand(), [c, last_id, frames = std::move(frames)]() mutable { c->follow_news(last_id, std::move(frames)); });
}

std::shared_ptr<agent> session_hub::agent_for(const session_record& session) { return providers_.make_agent(session); }

}  // namespace agw::core
