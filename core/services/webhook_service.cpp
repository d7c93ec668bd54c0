#include "core/services/webhook_service.hpp"

#include <boost/asio/use_awaitable.hpp>

#include "core/api_error.hpp"
#include "core/clock.hpp"
#include "core/services/session_service.hpp"
#include "core/store_executor.hpp"

namespace agw::core {

namespace net = boost::asio;

webhook_service::webhook_service(store_executor& store, session_service& sessions, const clock& time)
    : store_(store), sessions_(sessions), clock_(time) {}

net::awaitable<std::vector<webhook_delivery_record>> webhook_service::list(std::string session_id) {
  auto finding = sessions_.require(std::move(session_id));
  auto session = co_await std::move(finding);
  auto read = [id = session.id](store_connection& c) { return c.list_webhook_deliveries(id); };
  co_return co_await store_.async_read(std::move(read), net::use_awaitable);
}

net::awaitable<webhook_delivery_record> webhook_service::redeliver(std::string session_id, std::string delivery_id) {
  auto finding = sessions_.require(std::move(session_id));
  auto session = co_await std::move(finding);
  // Check and requeue in one write job, so two racing redeliveries cannot both pass the check.
  struct requeued {
    std::optional<webhook_delivery_record> delivery;
    bool was_pending = false;
  };
  auto requeue = [id = session.id, delivery_id, &time = clock_](store_connection& c) {
    requeued out;
    out.delivery = c.find_webhook_delivery(id, delivery_id);
    if (!out.delivery) return out;
    if (out.delivery->status == "pending") {
      out.was_pending = true;
      return out;
    }
    c.requeue_webhook_delivery(delivery_id, time.wall_ms());
    // Read back with its attempts, as the listing shows it.
    for (auto& d : c.list_webhook_deliveries(id))
      if (d.id == delivery_id) out.delivery = std::move(d);
    return out;
  };
  auto result = co_await store_.async_write(std::move(requeue), net::use_awaitable);
  if (!result.delivery) throw api_error(error_code::not_found, "no such webhook delivery");
  if (result.was_pending)
    throw api_error(error_code::delivery_pending, "this delivery is still pending; it will be attempted again");
  co_return std::move(*result.delivery);
}

net::awaitable<std::vector<webhook_delivery_record>> webhook_service::claim_due(std::int64_t now_ms, std::size_t limit,
                                                                                std::int64_t claim_ms) {
  auto claim = [now_ms, limit, until = now_ms + claim_ms](store_connection& c) {
    return c.claim_due_webhook_deliveries(now_ms, until, limit);
  };
  co_return co_await store_.async_write(std::move(claim), net::use_awaitable);
}

net::awaitable<std::optional<std::int64_t>> webhook_service::next_due_ms(std::int64_t after_ms) {
  auto next_due = [after_ms](store_connection& c) { return c.next_webhook_due_ms(after_ms); };
  co_return co_await store_.async_read(std::move(next_due), net::use_awaitable);
}

net::awaitable<bool> webhook_service::record_attempt(webhook_attempt_outcome outcome) {
  auto record = [outcome = std::move(outcome)](store_connection& c) { return c.record_webhook_attempt(outcome); };
  co_return co_await store_.async_write(std::move(record), net::use_awaitable);
}

}  // namespace agw::core
