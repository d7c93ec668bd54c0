#include "gateway/drain.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/services/run_service.hpp"
#include "core/session_hub.hpp"
#include "gateway/webhooks/webhook_dispatcher.hpp"

namespace agw::gateway {

drain::drain(core::io_pool& io, core::metrics& stats, core::session_hub& hub, core::run_service& runs,
             webhook_dispatcher& webhooks, std::chrono::duration<double> timeout)
    : io_(io),
      stats_(stats),
      hub_(hub),
      runs_(runs),
      webhooks_(webhooks),
      timeout_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout)) {}

void drain::start(std::function<void()> on_done) { net::co_spawn(io_.primary(), run(std::move(on_done)), net::detached); }

bool drain::runs_ended() const { return stats_.runs_admitted.load() == 0; }

awaitable<bool> drain::wait_for(const std::function<bool()>& done, std::chrono::steady_clock::time_point until) {
  net::steady_timer pause(io_.primary());
  for (;;) {
    // A follower whose run has just ended, or that subscribed since the last tick, ends now.
    hub_.close_idle_streams();
    if (done()) co_return true;
    if (std::chrono::steady_clock::now() >= until) co_return false;
    pause.expires_after(tick);
    co_await pause.async_wait(net::as_tuple(net::use_awaitable));
  }
}

awaitable<void> drain::run(std::function<void()> on_done) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  // Named locals, not temporaries, inside co_await: GCC 12 mishandles the latter.
  const std::function<bool()> ended = [this] { return runs_ended(); };
  auto waiting = wait_for(ended, deadline);
  const bool in_time = co_await std::move(waiting);
  if (!in_time) {
    spdlog::warn("drain deadline reached: aborting {} live runs ({} open streams)", stats_.runs_admitted.load(),
                 stats_.sse_streams_open.load());
    runs_.abort_all();
    auto grace = wait_for(ended, std::chrono::steady_clock::now() + abort_grace);
    const bool aborted = co_await std::move(grace);
    if (!aborted) spdlog::warn("drain: {} runs still live after the abort grace", stats_.runs_admitted.load());
  }
  // Runs are over: every follower has been told to close (each tick closes the idle
  // ones). Streams opened meanwhile keep arriving (an EventSource reconnects), so
  // waiting for none open could last to the deadline: the ones closing get a moment
  // to send their last bytes.
  const std::function<bool()> streams_closed = [this] { return stats_.sse_streams_open.load() == 0; };
  auto closing = wait_for(streams_closed, std::min(deadline, std::chrono::steady_clock::now() + stream_grace));
  co_await std::move(closing);
  webhooks_.drain();
  const std::function<bool()> delivered = [this] { return webhooks_.loop_ended() && webhooks_.attempts_in_flight() == 0; };
  auto delivering = wait_for(delivered, std::min(deadline, std::chrono::steady_clock::now() + webhook_grace));
  const bool all_sent = co_await std::move(delivering);
  if (!all_sent) spdlog::warn("drain: {} webhook attempts cut; they stay pending", webhooks_.attempts_in_flight());
  spdlog::info("drain finished");
  on_done();
}

}  // namespace agw::gateway
