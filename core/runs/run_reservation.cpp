#include "core/runs/run_reservation.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/clock.hpp"
#include "core/ids.hpp"
#include "core/runs/run.hpp"
#include "core/runs/session_channel.hpp"

namespace agw::core {

namespace net = boost::asio;

net::awaitable<reservation> reserve(std::shared_ptr<session_channel> channel, const clock& time, event_source source) {
  auto claim = [channel, &time, source, started = time.wall_ms()]() -> net::awaitable<reservation> {
    if (auto live = channel->live_run()) co_return reservation{nullptr, live->id()};
    auto r = std::make_shared<run>(channel->strand(), time, new_uuid(), started, channel->last_assigned_id(), source);
    channel->set_live_run(r);
    co_return reservation{r, ""};
  };
  auto claiming = net::co_spawn(channel->strand(), claim(), net::use_awaitable);
  co_return co_await std::move(claiming);
}

net::awaitable<void> release(std::shared_ptr<session_channel> channel, std::shared_ptr<run> r) {
  auto give_back = [channel, r]() -> net::awaitable<void> {
    if (channel->live_run() == r) channel->set_live_run(nullptr);
    co_return;
  };
  auto releasing = net::co_spawn(channel->strand(), give_back(), net::use_awaitable);
  co_await std::move(releasing);
}

}  // namespace agw::core
