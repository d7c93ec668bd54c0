#include "core/runs/run.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace agw::core {

namespace net = boost::asio;

run::run(io_strand strand, std::string id, std::int64_t started_at_ms, std::int64_t events_before)
    : strand_(strand), id_(std::move(id)), started_at_ms_(started_at_ms), events_before_(events_before), sleeper_(strand) {}

bool run::request_abort() {
  if (finishing_) return false;
  abort_ = true;
  net::post(strand_, [self = shared_from_this()] { self->sleeper_.cancel(); });
  return true;
}

net::awaitable<bool> run::sleep_until(std::chrono::steady_clock::time_point deadline) {
  if (abort_) co_return false;
  sleeper_.expires_at(deadline);
  co_await sleeper_.async_wait(net::as_tuple(net::use_awaitable));
  co_return !abort_;
}

}  // namespace agw::core
