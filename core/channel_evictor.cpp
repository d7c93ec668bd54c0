#include "core/channel_evictor.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "core/periodic.hpp"
#include "core/session_hub.hpp"

namespace agw::core {

namespace net = boost::asio;

channel_evictor::channel_evictor(session_hub& hub, const clock& time, std::chrono::milliseconds idle_for)
    : hub_(hub), clock_(time), idle_for_(idle_for) {}

void channel_evictor::start(net::any_io_executor executor) { net::co_spawn(executor, loop(shared_from_this()), net::detached); }

// The parameter (unnamed) is the frame's copy of the owner: it keeps `this` alive while the loop runs.
net::awaitable<void> channel_evictor::loop(std::shared_ptr<channel_evictor>) {
  // A channel goes between idle_for and idle_for + a quarter of it after its last activity.
  const auto every = std::clamp(idle_for_ / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(10'000));
  auto pass = [this]() -> net::awaitable<void> {
    hub_.evict_idle(idle_for_);
    co_return;
  };
  auto repeating = repeat_every(clock_, every, stopped_, pass, "channel eviction");
  co_await std::move(repeating);
}

}  // namespace agw::core
