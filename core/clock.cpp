#include "core/clock.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace agw::core {

namespace net = boost::asio;

std::int64_t clock::wall_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(wall_now().time_since_epoch()).count();
}

net::awaitable<void> clock::sleep_for(std::chrono::steady_clock::duration d) const {
  auto timer = make_timer(co_await net::this_coro::executor);
  auto waiting = timer->wait_until(steady_now() + d);
  co_await std::move(waiting);
}

std::unique_ptr<wait_timer> real_clock::make_timer(net::any_io_executor executor) const {
  return std::make_unique<steady_wait_timer>(std::move(executor));
}

net::awaitable<bool> steady_wait_timer::wait_until(steady_time deadline) {
  timer_.expires_at(deadline);
  auto waiting = timer_.async_wait(net::as_tuple(net::use_awaitable));
  auto [ec] = co_await std::move(waiting);
  // A cancel that arrives after the deadline passed finds nothing to cancel: the wait was full.
  co_return !ec;
}

}  // namespace agw::core
