#pragma once
// The live side of every session: one session_channel per session in use,
// created on first use with the session's last committed event id so ids
// continue across restarts, and dropped once idle (evict_idle) so that memory
// follows the sessions in use, not every session used since start-up. Also picks
// the agent for a session's config, through the provider registry.
//
// Ids never go back across a drop: a channel goes only when its every event is
// where a read of the session's last id finds it (event_log_writer::retire), and
// a channel made from a read that began before a drop takes the dropped channel's
// last id; a read of a session deleted since is answered not_found (the hub
// remembers drops for a minute; a read older than what it remembers is refused as
// unavailable, to be retried). docs/architecture.md, "Channels in memory".
//
// Thread-safe: a mutex guards the map only; channel work runs on each
// channel's strand, never under the mutex. A channel's strand is the executor
// `placement` returns when the channel is created (the server's: the io context of
// the thread that asks, see core/io_pool.hpp; an implicit strand, core/io_executor.hpp).
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

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

  // How long a drop (an eviction or a deletion) is remembered for reads that began before
  // it: a minute, far longer than a session read takes (tests shorten it).
  void remember_drops_for(std::chrono::milliseconds d) {
    std::lock_guard lock(mutex_);
    drop_memory_ = d;
  }

  // The session's channel, created from the record (read after its read_epoch was taken,
  // as session_service does) when it does not exist yet. Throws api_error not_found when
  // the session read was deleted since, unavailable when the read began before a drop the
  // hub no longer remembers (the read took over a minute).
  std::shared_ptr<session_channel> channel(const session_record& session);
  // The same from a last id read before any drop, of a session never deleted (tests).
  std::shared_ptr<session_channel> channel(const std::string& session_id, std::int64_t last_event_id);
  std::shared_ptr<session_channel> find(const std::string& session_id) const;
  live_view live_state(const std::string& session_id) const;

  // After the session's rows were deleted: aborts the live run, closes subscribers and
  // forgets the channel and what the event log writer held for it. `thread_id`: the deleted
  // session's, which tells its records from those of a session made again with its id.
  void session_deleted(const std::string& session_id, const std::string& thread_id);

  // Drops made so far: take it before reading a session from the store (read_epoch).
  std::uint64_t epoch() const;
  // Drops the channels quiet for at least `idle_for` that are evictable (on each one's
  // strand, session_channel::evictable) and that nobody else holds, at most `limit` per
  // call; forgets drops older than remember_drops_for. The drops happen after it returns.
  void evict_idle(std::chrono::milliseconds idle_for, std::size_t limit = 10'000);
  std::size_t channel_count() const;
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
  // What a dropped channel leaves for reads that began before the drop.
  // One entry per session id holds all its drops still remembered. A session is one
  // incarnation of its id, told by its thread id (new at every creation): a read of an
  // incarnation deleted since is answered not_found; a read that began before the newest
  // eviction of the same incarnation takes the evicted channel's last id.
  struct drop {
    std::vector<std::string> deleted_threads;  // incarnations deleted (their thread ids)
    std::string evicted_thread;                // the newest eviction's incarnation
    std::int64_t last_id = 0;                  // its channel's last committed id
    std::uint64_t evicted_epoch = 0;           // the newest eviction's number; 0: none
    std::uint64_t deleted_epoch = 0;           // the newest deletion's number; 0: none
    std::uint64_t epoch = 0;                   // the newest drop's number
    std::int64_t at_ms = 0;                    // when it happened (steady clock)
  };
  std::shared_ptr<session_channel> channel(const std::string& session_id, const std::string& thread_id,
                                           std::int64_t last_event_id, std::uint64_t read_epoch);
  void try_evict(const std::shared_ptr<session_channel>& c);                                                  // on c's strand
  void remember_eviction(const std::string& session_id, const std::string& thread_id, std::int64_t last_id);  // mutex_ held
  void remember_deletion(const std::string& session_id, const std::string& thread_id);                        // mutex_ held
  drop& next_drop(const std::string& session_id);                                                             // mutex_ held
  void forget_old_drops(std::int64_t now_ms);                                                                 // mutex_ held

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
  // Drops of the last drop_memory, newest per session, oldest first in drop_order_: a
  // request that read the session just before its DELETE gets a closed channel instead of
  // one that would wait forever, one that read it before an eviction numbers on from the
  // evicted channel's last id.
  std::uint64_t epoch_ = 0;
  std::unordered_map<std::string, drop> drops_;
  std::deque<std::pair<std::string, std::uint64_t>> drop_order_;
  std::uint64_t forgotten_epoch_ = 0;  // the newest drop no longer in drops_
  std::chrono::milliseconds drop_memory_{60'000};
  std::size_t sweep_from_ = 0;  // where the next evict_idle pass starts looking (round robin)
};

}  // namespace agw::core
