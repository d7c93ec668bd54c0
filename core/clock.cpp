#include "core/clock.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstddef>

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

namespace {
// Deadlines are rounded up to the next whole millisecond of the steady clock, as the
// kernel's timer slack does. Timers due in the same millisecond then fire in one pass of
// the reactor, which re-arms its timerfd once per millisecond rather than once per timer:
// at 1,000 paced runs the re-arms were ~10 % of the server's CPU (a timer reprogram is a
// VM exit on virtual machines). A wait ends at most 1 ms late, never early.
constexpr auto timer_grain = std::chrono::milliseconds(1);

steady_time on_grain(steady_time deadline) {
  const auto since = deadline.time_since_epoch();
  const auto whole = std::chrono::ceil<std::chrono::milliseconds>(since);
  static_assert(timer_grain == std::chrono::milliseconds(1), "on_grain rounds to whole milliseconds");
  return steady_time(std::chrono::duration_cast<steady_time::duration>(whole));
}

// Slot i holds the millisecond (since the steady clock's epoch) last marked with
// ms % 64 == i; -1: none.
constexpr std::size_t grain_slots = 64;
thread_local std::array<std::int64_t, grain_slots> marked_grains = [] {
  std::array<std::int64_t, grain_slots> a{};
  a.fill(-1);
  return a;
}();

std::int64_t whole_ms(steady_time t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
}  // namespace

void timer_grains::mark(steady_time due) {
  const auto ms = whole_ms(on_grain(due));
  marked_grains[static_cast<std::size_t>(ms) % grain_slots] = ms;
}

std::optional<steady_time> timer_grains::next_marked(steady_time now, std::chrono::milliseconds within) {
  const auto from = std::chrono::floor<std::chrono::milliseconds>(now.time_since_epoch()).count() + 1;
  for (auto ms = from; ms < from + within.count(); ++ms)
    if (marked_grains[static_cast<std::size_t>(ms) % grain_slots] == ms)
      return steady_time(std::chrono::duration_cast<steady_time::duration>(std::chrono::milliseconds(ms)));
  return std::nullopt;
}

net::awaitable<bool> steady_wait_timer::wait_until(steady_time deadline) {
  timer_.expires_at(on_grain(deadline));
  timer_grains::mark(deadline);
  auto waiting = timer_.async_wait(net::as_tuple(net::use_awaitable));
  auto [ec] = co_await std::move(waiting);
  // A cancel that arrives after the deadline passed finds nothing to cancel: the wait was full.
  co_return !ec;
}

}  // namespace agw::core
