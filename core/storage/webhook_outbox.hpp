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
  // like the others (claim_due_webhook_deliveries, record_webhook_attempt), but neither listed
  // with a session nor deleted with one, and its attempts are not kept.
  virtual void insert_session_notice(const webhook_delivery_record& d) = 0;
  virtual std::vector<webhook_delivery_record> list_webhook_deliveries(
      std::string_view session_id) = 0;  // with attempts, oldest first
  virtual std::optional<webhook_delivery_record> find_webhook_delivery(std::string_view session_id,
                                                                       std::string_view delivery_id) = 0;
  // Claims the pending deliveries due at `now_ms` that no live claim holds (none, or one
  // that ended at or before `now_ms`), earliest first, at most `limit` (without attempts):
  // each is claimed until `claim_until_ms`, and no call (on any connection, any node)
  // hands it out again before that unless its attempt is recorded. Several nodes calling
  // at once get disjoint sets (PostgreSQL: FOR UPDATE SKIP LOCKED). A node that dies
  // mid-attempt leaves its claim to expire.
  virtual std::vector<webhook_delivery_record> claim_due_webhook_deliveries(std::int64_t now_ms, std::int64_t claim_until_ms,
                                                                            std::size_t limit) = 0;
  // The earliest time after `after_ms` at which a pending delivery falls due: its
  // next_attempt_at, or, while another claim holds it, when that claim ends (so a node does
  // not spin on deliveries claimed elsewhere, and takes over a dead node's at expiry).
  virtual std::optional<std::int64_t> next_webhook_due_ms(std::int64_t after_ms) = 0;
  // Appends the attempt, moves the delivery on and releases its claim; false when the
  // delivery is gone (session deleted).
  virtual bool record_webhook_attempt(const webhook_attempt_outcome& outcome) = 0;
  // Start-up repair: releases the claims this process's store connection made in an
  // earlier life (a process that is gone would otherwise hold its deliveries until the
  // claims expire): every claim of a store one process serves; on a shared store the
  // claims of this node (PostgreSQL: claimed_by, the node id).
  virtual void release_webhook_claims() = 0;
  // Queues a delivery again now, with a fresh retry schedule; false when there is no such delivery.
  virtual bool requeue_webhook_delivery(std::string_view delivery_id, std::int64_t now_ms) = 0;
};

}  // namespace agw::core
