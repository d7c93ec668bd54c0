#include "core/runs/run.hpp"

#include <boost/asio/post.hpp>

namespace agw::core {

namespace net = boost::asio;

run::run(io_strand strand, const clock& time, std::string id, std::int64_t started_at_ms, std::int64_t events_before,
         event_source source)
    : strand_(strand),
      clock_(time),
      id_(std::move(id)),
      started_at_ms_(started_at_ms),
      events_before_(events_before),
      source_(source),
      sleeper_(time.make_timer(strand)) {}

bool run::request_abort() {
  if (finishing_) return false;
  abort_ = true;
  net::post(strand_, [self = shared_from_this()] { self->sleeper_->cancel(); });
  return true;
}

net::awaitable<bool> run::sleep_until(steady_time deadline) {
  if (abort_) co_return false;
  auto sleeping = sleeper_->wait_until(deadline);
  co_await std::move(sleeping);
  co_return !abort_;
}

}  // namespace agw::core
