#include "gateway/heartbeat_wheel.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "core/io_executor.hpp"

namespace agw::gateway {

namespace net = boost::asio;

struct heartbeat_wheel::state {
  state(net::io_context& io, const core::clock& c, duration t, std::size_t slots)
      : clock(c), tick(t), epoch(c.steady_now()), executor(io.get_executor()), timer(c.make_timer(executor)), wheel(slots) {}

  // Tick k happens once the clock reads epoch + k x tick.
  std::uint64_t first_tick_at_or_after(core::steady_time t) const {
    const auto since = t - epoch;
    return since.count() <= 0 ? 0 : static_cast<std::uint64_t>((since.count() + tick.count() - 1) / tick.count());
  }
  std::uint64_t last_tick_by(core::steady_time t) const {
    const auto since = t - epoch;
    return since.count() <= 0 ? 0 : static_cast<std::uint64_t>(since.count() / tick.count());
  }

  const core::clock& clock;
  const duration tick;
  const core::steady_time epoch;
  const core::io_executor executor;
  const std::unique_ptr<core::wait_timer> timer;  // the tick loop's
  mutable std::mutex mutex;
  core::timer_wheel wheel;  // guarded by mutex
  bool stopped = false;     // guarded by mutex
  // The streams one tick took, in the tick loop; kept between ticks for its capacity
  // (no allocation per tick once it has grown to the largest batch).
  std::vector<std::shared_ptr<member>> due;
};

heartbeat_wheel::heartbeat_wheel(net::io_context& io, const core::clock& clock, duration tick, std::size_t slots)
    : state_(std::make_shared<state>(io, clock, std::max(tick, duration(1)), slots)) {
  net::co_spawn(state_->executor, run(state_), net::detached);
}

heartbeat_wheel::~heartbeat_wheel() {
  // Released outside the lock: a member's destructor may run here.
  std::vector<std::shared_ptr<member>> released;
  {
    std::lock_guard lock(state_->mutex);
    state_->stopped = true;
    state_->wheel.clear([&](core::timer_wheel::hook& h) { released.push_back(std::move(static_cast<member&>(h).hold_)); });
  }
  // The loop ends at its next resumption; its frame holds the state until then.
  state_->timer->cancel();
}

net::awaitable<void> heartbeat_wheel::run(std::shared_ptr<state> s) {
  for (;;) {
    const std::uint64_t next = s->last_tick_by(s->clock.steady_now()) + 1;
    auto waiting = s->timer->wait_until(s->epoch + s->tick * static_cast<duration::rep>(next));
    if (!co_await std::move(waiting)) co_return;
    // One advance however late the wake (a busy machine, a test's clock jump): no catching up tick by tick.
    const std::uint64_t now_tick = s->last_tick_by(s->clock.steady_now());
    {
      std::lock_guard lock(s->mutex);
      if (s->stopped) co_return;
      s->wheel.advance(now_tick, [&](core::timer_wheel::hook& h) { s->due.push_back(std::move(static_cast<member&>(h).hold_)); });
    }
    // Outside the lock: a stream woken here may schedule itself again at once.
    for (auto& m : s->due) {
      member* target = m.get();
      target->on_due(std::move(m));
    }
    s->due.clear();
  }
}

void heartbeat_wheel::schedule(std::shared_ptr<member> m, core::steady_time at) {
  const std::uint64_t due = state_->first_tick_at_or_after(at);
  std::shared_ptr<member> previous;  // dropped outside the lock (never the last reference: the caller has one)
  std::lock_guard lock(state_->mutex);
  if (state_->stopped) return;
  member& target = *m;
  previous = std::exchange(target.hold_, std::move(m));
  state_->wheel.schedule(target, due);
}

void heartbeat_wheel::cancel(member& m) {
  std::shared_ptr<member> released;  // dropped after the lock
  std::lock_guard lock(state_->mutex);
  state_->wheel.cancel(m);
  released = std::move(m.hold_);
}

core::steady_time heartbeat_wheel::now() const { return state_->clock.steady_now(); }
heartbeat_wheel::duration heartbeat_wheel::tick() const { return state_->tick; }
std::size_t heartbeat_wheel::size() const {
  std::lock_guard lock(state_->mutex);
  return state_->wheel.size();
}

heartbeat_wheel::duration heartbeat_wheel::tick_for(duration heartbeat, duration write_timeout) {
  using namespace std::chrono_literals;
  const duration shorter = std::min(heartbeat, write_timeout) / 20;
  return std::clamp<duration>(shorter, 10ms, 250ms);
}

namespace {

// The per-io_context wheel. Its clock: core::real_clock is stateless, so this one
// reads the same time as main's (the server does not hand its clock to connections).
class wheel_service final : public net::execution_context::service {
 public:
  static inline net::execution_context::id id;  // asio's key for use_service

  explicit wheel_service(net::execution_context& context) : net::execution_context::service(context) {}

  heartbeat_wheel& wheel(net::io_context& io, heartbeat_wheel::duration tick) {
    std::lock_guard lock(mutex_);
    // Made for the first stream, on the io_context it runs on.
    if (!wheel_) wheel_ = std::make_unique<heartbeat_wheel>(io, clock_, tick);
    return *wheel_;
  }

 private:
  // Called as the io_context goes, before any of its handlers are destroyed and with
  // no thread running it: the wheel releases the streams it held.
  void shutdown() override { wheel_.reset(); }

  std::mutex mutex_;
  core::real_clock clock_;
  std::unique_ptr<heartbeat_wheel> wheel_;
};

// The io_context under a stream's executor (its connection's: the context's own, core/io_executor.hpp).
net::io_context& io_context_of(const net::any_io_executor& executor) {
  if (const auto* own = executor.target<core::io_executor>()) return own->context();
  throw std::logic_error("heartbeat_wheel::of: the executor is not an io_context's own");
}

}  // namespace

heartbeat_wheel& heartbeat_wheel::of(const net::any_io_executor& executor, duration tick) {
  net::io_context& io = io_context_of(executor);
  return net::use_service<wheel_service>(io).wheel(io, tick);
}

}  // namespace agw::gateway
