#include "core/services/health_service.hpp"

#include <boost/asio/use_awaitable.hpp>

#include "core/store_executor.hpp"

namespace agw::core {

namespace net = boost::asio;

health_service::health_service(store_executor& store) : store_(store) {}

net::awaitable<void> health_service::check_writable() {
  auto nothing = [](store_connection&) {};
  co_await store_.async_write(nothing, net::use_awaitable);
}

std::uint64_t health_service::rejected_jobs() const { return store_.rejected(); }

std::size_t health_service::queue_depth() const { return store_.queue_depth(); }

const histogram& health_service::commit_latency() const { return store_.commit_latency(); }

}  // namespace agw::core
