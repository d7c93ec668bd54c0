#pragma once
// The live side of every session: one session_channel per session that has
// been used since start-up, created on first use with the session's last
// committed event id so ids continue across restarts. Also picks the agent
// for a session's config, through the provider registry.
// Thread-safe: a mutex guards the map only; channel work runs on each
// channel's strand, never under the mutex. A channel's strand is made on the
// executor `placement` returns when the channel is created (the server's: the io
// context of the thread that asks, see core/io_pool.hpp).
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/agents/agent.hpp"
#include "core/agents/provider_registry.hpp"
#include "core/metrics.hpp"
#include "core/runs/session_channel.hpp"
#include "core/settings.hpp"
#include "core/storage/event_log_writer.hpp"
#include "core/storage/live_fanout.hpp"
#include "core/store_executor.hpp"
#include "core/tools/tool_runner.hpp"

namespace agw::core {

class session_hub : public live_fanout_receiver {
 public:
  using placement = std::function<io_executor()>;
  session_hub(placement place, store_executor& store, event_log_writer& log, metrics& stats, const settings& config,
              tool_runner& tools);
  // Every channel on one executor.
  session_hub(io_executor executor, store_executor& store, event_log_writer& log, metrics& stats, const settings& config,
              tool_runner& tools);

  using live_view = session_channel::snapshot_view;

  // The session's channel, created with last_event_id when it does not exist yet.
  std::shared_ptr<session_channel> channel(const std::string& session_id, std::int64_t last_event_id);
  std::shared_ptr<session_channel> find(const std::string& session_id) const;
  live_view live_state(const std::string& session_id) const;

  // Aborts the live run, closes subscribers and forgets the channel.
  void session_deleted(const std::string& session_id);
  // Draining: close every subscriber stream (clients reconnect elsewhere or later).
  void close_all_streams();
  // Draining: close the subscriber streams of sessions with no live run; those of a
  // live run get its events to its end (called again as runs end).
  void close_idle_streams();
  // Every channel made since start-up and not deleted (a snapshot).
  std::vector<std::shared_ptr<session_channel>> all_channels() const;

  // A cluster: channels made from now on tell `fanout` of each committed batch (call
  // before the first channel is made).
  void use_fanout(live_fanout& fanout) { services_.fanout = &fanout; }
  // live_fanout_receiver: another node's commit, handed to this process's channel of the
  // session on its strand (session_channel::follow_log); nothing when there is none (a
  // channel made later starts from the log's last id).
  void committed_elsewhere(const std::string& session_id, std::int64_t last_id, std::vector<frame_ptr> frames) override;

  // The agent config.provider names (see provider_registry::make_agent).
  std::shared_ptr<agent> agent_for(const session_record& session);
  tool_runner& tools() { return tools_; }

 private:
  placement place_;
  store_executor& store_;
  metrics& stats_;
  channel_services services_;
  const settings& config_;
  tool_runner& tools_;
  // The same registry validate_config asks, so every valid config names a provider it can make.
  const provider_registry& providers_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<session_channel>> channels_;
  // Ids deleted since start-up: a request that looked the session up just before its
  // DELETE gets a closed channel instead of one that would wait forever.
  std::unordered_set<std::string> deleted_;
};

}  // namespace agw::core
