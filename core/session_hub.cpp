#include "core/session_hub.hpp"

#include <boost/asio/post.hpp>

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

std::shared_ptr<session_channel> session_hub::channel(const std::string& session_id, std::int64_t last_event_id) {
  std::lock_guard lock(mutex_);
  auto& slot = channels_[session_id];
  if (!slot) {
    session_channel::options opts;
    opts.ring_size = config_.sse_buffer_size;
    opts.retention = config_.event_retention;
    opts.replay_page = std::max<std::size_t>(16, config_.sse_subscriber_queue / 4);
    opts.subscriber_backlog = config_.sse_subscriber_queue;
    opts.deleted = deleted_.contains(session_id);
    slot = std::make_shared<session_channel>(place_(), session_id, last_event_id, services_, opts);
  }
  return slot;
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

void session_hub::session_deleted(const std::string& session_id) {
  std::shared_ptr<session_channel> c;
  {
    std::lock_guard lock(mutex_);
    deleted_.insert(session_id);
    auto it = channels_.find(session_id);
    if (it == channels_.end()) return;
    c = std::move(it->second);
    channels_.erase(it);
  }
  net::post(c->strand(), [c] { c->close(); });
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
