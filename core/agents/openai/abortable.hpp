#pragma once
// Awaits `op` unless the run is aborted first: then `op` is cancelled (Asio's
// per-operation cancellation, which closes an upstream exchange's connection at
// once) and the result is empty. Runs on the session's strand.
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <chrono>
#include <optional>
#include <variant>

#include "core/runs/run_context.hpp"

namespace agw::core::openai {

template <class T>
boost::asio::awaitable<std::optional<T>> unless_aborted(run_context& ctx, boost::asio::awaitable<T> op) {
  using namespace boost::asio::experimental::awaitable_operators;
  if (ctx.aborted()) co_return std::nullopt;
  // The run's own sleep ends early on abort; a day is "never" for one read.
  auto abort_watch = ctx.sleep_until(ctx.time().steady_now() + std::chrono::hours(24));
  auto either = std::move(op) || std::move(abort_watch);
  auto outcome = co_await std::move(either);
  if (outcome.index() == 0) co_return std::get<0>(std::move(outcome));
  co_return std::nullopt;
}

}  // namespace agw::core::openai
