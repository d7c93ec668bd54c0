#pragma once
// The drain SIGTERM/SIGINT starts (docs/operations.md, "Drain"). The listener keeps
// accepting and the handlers refuse new runs (app_context::draining); this waits for
// what is under way. First live runs to their done, with the SSE streams following
// them; followers of sessions with no live run are closed cleanly (again on every
// tick, so a stream opened during the drain ends too). At GATEWAY_DRAIN_TIMEOUT every
// live run is asked to abort (each is persisted as aborted and sends its done) and
// gets a short grace to do so. Then the webhook dispatcher makes one last pass over
// the outbox rows due by then (the callbacks of the runs just ended included) and
// those attempts get until the deadline, at most webhook_grace: a hanging receiver
// does not hold the exit, its row stays pending for the next start. Then on_done
// runs (the server stops the io loop; main flushes the store).
//
// Executor: one coroutine on the pool's primary context; reads only atomics and
// posts to the channels' strands, so it never blocks an io thread.
#include <chrono>
#include <functional>

#include "core/io_pool.hpp"
#include "core/metrics.hpp"
#include "gateway/http_types.hpp"

namespace agw::core {
class run_service;
class session_hub;
}  // namespace agw::core

namespace agw::gateway {

class webhook_dispatcher;

class drain {
 public:
  // After the deadline's abort, how long aborted runs get to persist and send their done.
  static constexpr std::chrono::seconds abort_grace{5};
  // The longest the last webhook attempts are waited for once runs and streams ended.
  static constexpr std::chrono::seconds webhook_grace{2};
  // Once runs ended, how long followers told to close get to finish their last write.
  static constexpr std::chrono::milliseconds stream_grace{500};
  // How often the drain looks at what is left.
  static constexpr std::chrono::milliseconds tick{50};

  // Everything referenced outlives the drain (the server owns it all).
  drain(core::io_pool& io, core::metrics& stats, core::session_hub& hub, core::run_service& runs, webhook_dispatcher& webhooks,
        std::chrono::duration<double> timeout);

  // Starts once; on_done runs on the primary context when the drain is over.
  void start(std::function<void()> on_done);

 private:
  awaitable<void> run(std::function<void()> on_done);
  // Waits, closing idle followers each tick, until `done()` or `until`; false at `until`.
  awaitable<bool> wait_for(const std::function<bool()>& done, std::chrono::steady_clock::time_point until);
  bool runs_ended() const;

  core::io_pool& io_;
  core::metrics& stats_;
  core::session_hub& hub_;
  core::run_service& runs_;
  webhook_dispatcher& webhooks_;
  std::chrono::steady_clock::duration timeout_;
};

}  // namespace agw::gateway
