#pragma once
// Owns the io threads, the listener and the app context for one process, and
// runs the two-stage shutdown: SIGTERM/SIGINT starts the drain (gateway/drain.hpp:
// keep accepting, refuse new runs, let live runs finish up to the drain deadline),
// a second signal forces the exit (main still commits every queued write).
// Hands the process's clock (main's) to everything below that reads time.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <memory>

#include "core/channel_evictor.hpp"
#include "core/clock.hpp"
#include "core/file_offset_clock.hpp"
#include "core/io_pool.hpp"
#include "core/metrics.hpp"
#include "core/runs/log_follower.hpp"
#include "core/services/event_forwarder.hpp"
#include "core/services/event_service.hpp"
#include "core/services/health_service.hpp"
#include "core/services/message_service.hpp"
#include "core/services/run_service.hpp"
#include "core/services/run_takeover.hpp"
#include "core/services/session_service.hpp"
#include "core/services/session_sweeper.hpp"
#include "core/services/state_service.hpp"
#include "core/services/timeline_service.hpp"
#include "core/services/webhook_service.hpp"
#include "core/session_hub.hpp"
#include "core/settings.hpp"
#include "core/storage/live_fanout.hpp"
#include "core/storage/storage_backend.hpp"
#include "core/tools/tool_runner.hpp"
#include "gateway/app_context.hpp"
#include "gateway/drain.hpp"
#include "gateway/listener.hpp"
#include "gateway/rate_limiter.hpp"
#include "gateway/webhooks/webhook_dispatcher.hpp"

namespace agw::gateway {

class server {
 public:
  // `time` outlives the server (main's real_clock); so does `fanout`, the cluster's live
  // fan-out (docs/scale-out.md; null on a single node), which the server starts and stops.
  server(const core::settings& config, core::storage_backend storage, const core::clock& time,
         core::live_fanout* fanout = nullptr);
  ~server();
  // Serves until a signal ends the drain; returns the process exit code.
  int run();

 private:
  void on_signal(const boost::system::error_code& ec, int signal);

  const core::settings& config_;
  // Declared before the io contexts: coroutine frames destroyed with them still touch the counters.
  core::metrics stats_;
  core::io_pool io_;
  core::tool_registry tools_;
  core::tool_runner tool_runner_;
  core::session_hub hub_;
  // The use cases the handlers call (they hold the store; the gateway never does).
  core::session_service sessions_;
  core::state_service state_;
  core::message_service messages_;
  core::event_service events_;
  core::webhook_service deliveries_;
  core::health_service health_;
  webhook_dispatcher webhooks_;
  core::run_service runs_;              // after the dispatcher: a run's outbox row wakes it
  core::timeline_service timeline_;     // after runs_: shares its conversation cache
  std::unique_ptr<rate_limiter> rate_;  // GATEWAY_RATE_LIMIT; null when off
  app_context app_;
  std::unique_ptr<listener> listener_;
  drain drain_;
  // The TTL sweep and its clock (the process's, or a test's offset one).
  std::unique_ptr<core::file_offset_clock> sweep_clock_;
  std::shared_ptr<core::session_sweeper> sweeper_;
  std::shared_ptr<core::channel_evictor> evictor_;    // none when GATEWAY_CHANNEL_IDLE is 0
  std::shared_ptr<core::event_forwarder> forwarder_;  // event webhooks into the outbox
  core::live_fanout* fanout_;                         // null: a single node
  std::shared_ptr<core::log_follower> follower_;      // a cluster's followers read the log too
  std::shared_ptr<core::run_takeover> takeover_;      // PostgreSQL: runs of nodes whose lease lapsed
  net::signal_set signals_;
  int signals_seen_ = 0;
};

}  // namespace agw::gateway
