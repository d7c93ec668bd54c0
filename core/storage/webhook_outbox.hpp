#pragma once
// Port: the completion-callback outbox: deliveries and their attempts. Used on a
// store connection's thread only; throws store_error.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/store_records.hpp"

namespace agw::core {

class webhook_outbox {
 public:
  virtual ~webhook_outbox() = default;
  virtual void insert_webhook_delivery(const webhook_delivery_record& d) = 0;
  // A delivery that outlives its session (session.expired): due, attempted and moved on
  // like the others (due_webhook_deliveries, record_webhook_attempt), but neither listed
  // with a session nor deleted with one, and its attempts are not kept.
  virtual void insert_session_notice(const webhook_delivery_record& d) = 0;
  virtual std::vector<webhook_delivery_record> list_webhook_deliveries(
      std::string_view session_id) = 0;  // with attempts, oldest first
  virtual std::optional<webhook_delivery_record> find_webhook_delivery(std::string_view session_id,
                                                                       std::string_view delivery_id) = 0;
  // Pending deliveries due at `now_ms`, earliest first (without attempts).
  virtual std::vector<webhook_delivery_record> due_webhook_deliveries(std::int64_t now_ms, std::size_t limit) = 0;
  virtual std::optional<std::int64_t> next_webhook_due_ms(
      std::int64_t after_ms) = 0;  // earliest next_attempt_at > after_ms of a pending delivery
  // Appends the attempt and moves the delivery on; false when the delivery is gone (session deleted).
  virtual bool record_webhook_attempt(const webhook_attempt_outcome& outcome) = 0;
  // Queues a delivery again now, with a fresh retry schedule; false when there is no such delivery.
  virtual bool requeue_webhook_delivery(std::string_view delivery_id, std::int64_t now_ms) = 0;
};

}  // namespace agw::core
