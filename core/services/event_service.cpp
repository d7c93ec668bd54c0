#include "core/services/event_service.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/clock.hpp"
#include "core/events/subscriber.hpp"
#include "core/runs/session_channel.hpp"
#include "core/services/session_service.hpp"
#include "core/session_hub.hpp"

namespace agw::core {

namespace net = boost::asio;

namespace {

// Wakes a waiting long poll when the channel hands it anything (or closes).
// deliver()/close() run on the session strand and only post here.
class poll_waiter final : public subscriber, public std::enable_shared_from_this<poll_waiter> {
 public:
  poll_waiter(net::any_io_executor executor, const clock& time) : executor_(executor), timer_(time.make_timer(executor)) {}
  void deliver(const frame_batch&) override { wake(); }
  void close(close_reason) override { wake(); }
  wait_timer& timer() { return *timer_; }
  bool woken() const { return woken_; }

 private:
  void wake() {
    net::post(executor_, [self = shared_from_this()] {
      self->woken_ = true;
      self->timer_->cancel();
    });
  }
  net::any_io_executor executor_;
  std::unique_ptr<wait_timer> timer_;  // on executor_
  bool woken_ = false;
};

// The channel serves what its ring holds and reads the log for the rest.
net::awaitable<std::vector<frame_ptr>> read_channel(std::shared_ptr<session_channel> channel, std::int64_t after,
                                                    std::size_t limit) {
  auto reading = net::co_spawn(channel->strand(), channel->read_after(after, limit), net::use_awaitable);
  co_return co_await std::move(reading);
}

// Subscribes first, then waits: an event committed since the last read wakes the waiter either way.
// `time` is the process's clock (it outlives every request).
net::awaitable<void> wait_for_events(std::shared_ptr<session_channel> channel, std::int64_t after,
                                     std::chrono::duration<double> wait, const clock& time) {
  auto waiter = std::make_shared<poll_waiter>(co_await net::this_coro::executor, time);
  const auto deadline = time.steady_now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(wait);
  auto join = [channel, waiter, after]() -> net::awaitable<void> {
    channel->subscribe(waiter, after);
    co_return;
  };
  auto joining = net::co_spawn(channel->strand(), join(), net::use_awaitable);
  co_await std::move(joining);
  if (!waiter->woken()) {
    auto waiting = waiter->timer().wait_until(deadline);
    co_await std::move(waiting);
  }
  auto leave = [channel, raw = waiter.get()]() -> net::awaitable<void> {
    channel->unsubscribe(raw);
    co_return;
  };
  auto leaving = net::co_spawn(channel->strand(), leave(), net::use_awaitable);
  co_await std::move(leaving);
}

}  // namespace

event_service::event_service(session_service& sessions, session_hub& hub, const clock& time)
    : sessions_(sessions), hub_(hub), clock_(time) {}

net::awaitable<std::shared_ptr<session_channel>> event_service::channel(std::string session_id) {
  // A live channel means a live session: the hub drops it when the session is deleted.
  // A resume then goes straight to the ring, without a store round trip first.
  if (auto live = hub_.find(session_id)) co_return live;
  auto finding = sessions_.require(std::move(session_id));
  auto session = co_await std::move(finding);
  co_return hub_.channel(session);
}

net::awaitable<std::vector<frame_ptr>> event_service::read_after(std::string session_id, std::int64_t after_id, std::size_t limit,
                                                                 std::chrono::duration<double> wait) {
  auto finding = channel(std::move(session_id));
  auto ch = co_await std::move(finding);
  auto reading = read_channel(ch, after_id, limit);
  auto events = co_await std::move(reading);
  if (events.empty() && wait.count() > 0 && limit > 0) {
    auto waiting = wait_for_events(ch, after_id, wait, clock_);
    co_await std::move(waiting);
    auto rereading = read_channel(ch, after_id, limit);
    events = co_await std::move(rereading);
  }
  co_return events;
}

}  // namespace agw::core
