#pragma once
// The webhook outbox's use cases: a session's deliveries with their attempts,
// a redelivery, and what the dispatcher (gateway/webhooks) needs of storage:
// the deliveries due now, when the next one falls due, and recording an
// attempt with the delivery's next state. Owns all of the outbox's storage access.
//
// Executor: awaitables on the caller's executor (a connection's strand, or the
// dispatcher's); no mutable state of its own. A redelivery is due at the
// injected clock's now; the dispatcher passes its own `now_ms` to claim_due().
#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/store_records.hpp"

namespace agw::core {

class clock;
class session_service;
class store_executor;

class webhook_service {
 public:
  webhook_service(store_executor& store, session_service& sessions, const clock& time);

  // Oldest first, with their attempts. api_error(not_found) for an unknown session.
  boost::asio::awaitable<std::vector<webhook_delivery_record>> list(std::string session_id);
  // Queues a delivered or failed delivery again now, with a fresh retry schedule, and
  // returns it as it now stands. api_error: not_found (session or delivery),
  // delivery_pending (it is still pending: it will be attempted again anyway).
  // The caller wakes the dispatcher.
  boost::asio::awaitable<webhook_delivery_record> redeliver(std::string session_id, std::string delivery_id);

  // Claims the pending deliveries due at `now_ms` that no live claim holds, earliest first,
  // at most `limit` (without attempts), each until now_ms + claim_ms: no other node (nor
  // this one) is handed them before that unless their attempt is recorded (a write job:
  // webhook_outbox::claim_due_webhook_deliveries).
  boost::asio::awaitable<std::vector<webhook_delivery_record>> claim_due(std::int64_t now_ms, std::size_t limit,
                                                                         std::int64_t claim_ms);
  // The earliest time after `after_ms` a pending delivery falls due (its schedule, or the
  // end of another claim on it).
  boost::asio::awaitable<std::optional<std::int64_t>> next_due_ms(std::int64_t after_ms);
  // Appends the attempt, moves the delivery on and releases its claim; false when the delivery is gone.
  boost::asio::awaitable<bool> record_attempt(webhook_attempt_outcome outcome);

 private:
  store_executor& store_;
  session_service& sessions_;
  const clock& clock_;
};

}  // namespace agw::core
