#include "core/agents/openai/abort_watch.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

namespace agw::core::openai {

namespace net = boost::asio;

struct abort_watch::state {
  net::cancellation_signal stop;  // outlives the watching coroutine: it holds the state
  bool stopped = false;           // the watch ended before the coroutine first ran
};

namespace {

net::awaitable<void> watch(std::shared_ptr<run> r, std::shared_ptr<streaming_http_exchange> exchange,
                           std::shared_ptr<abort_watch::state> keep) {
  // Spawned, so it starts later: a short answer may be over already (nothing to cancel then).
  if (keep->stopped) co_return;
  // Ends early on an abort (request_abort cancels the run's timer) or when the watch is destroyed.
  auto sleeping = r->sleep_until(r->time().steady_now() + std::chrono::hours(24));
  co_await std::move(sleeping);
  if (r->abort_requested()) exchange->cancel();
}

}  // namespace

abort_watch::abort_watch(run_context& ctx, std::shared_ptr<streaming_http_exchange> exchange)
    : state_(std::make_shared<state>()) {
  auto r = ctx.current_run().shared_from_this();
  auto watching = watch(std::move(r), std::move(exchange), state_);
  net::co_spawn(ctx.channel().strand(), std::move(watching), net::bind_cancellation_slot(state_->stop.slot(), net::detached));
}

abort_watch::~abort_watch() {
  state_->stopped = true;
  state_->stop.emit(net::cancellation_type::terminal);
}

}  // namespace agw::core::openai
