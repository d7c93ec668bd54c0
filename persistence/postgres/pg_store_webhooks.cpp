// pg_store's webhook outbox: a row per delivery, a row per attempt.
#include "persistence/postgres/pg_store.hpp"

namespace agw::persistence::pg {
namespace {

#define AGW_PG_DELIVERY_COLUMNS \
  "id, webhook_id, session_id, run_id, url, payload, status, attempt_count, next_attempt_at, created_at"

core::webhook_delivery_record read_delivery(const result& r, int row) {
  core::webhook_delivery_record d;
  d.id = r.text(row, 0);
  d.webhook_id = r.text(row, 1);
  d.session_id = r.text(row, 2);
  d.run_id = r.text(row, 3);
  d.url = r.text(row, 4);
  d.payload = r.text(row, 5);
  d.status = r.text(row, 6);
  d.round_attempts = r.int64(row, 7);
  d.next_attempt_at_ms = r.optional_int64(row, 8);
  d.created_at_ms = r.int64(row, 9);
  return d;
}

}  // namespace

void pg_store::insert_webhook_delivery(const core::webhook_delivery_record& d) {
  db_.run("INSERT INTO webhook_deliveries (" AGW_PG_DELIVERY_COLUMNS
          ", event_first_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
          params()
              .add(d.id)
              .add(d.webhook_id)
              .add(d.session_id)
              .add(d.run_id)
              .add(d.url)
              .add(d.payload)
              .add(d.status)
              .add(d.round_attempts)
              .add(d.next_attempt_at_ms)
              .add(d.created_at_ms)
              .add(d.event_first_id));
}

void pg_store::insert_session_notice(const core::webhook_delivery_record& d) {
  db_.run(
      "INSERT INTO session_notices (id, webhook_id, session_id, url, payload, status, attempt_count, next_attempt_at, "
      "created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
      params()
          .add(d.id)
          .add(d.webhook_id)
          .add(d.session_id)
          .add(d.url)
          .add(d.payload)
          .add(d.status)
          .add(d.round_attempts)
          .add(d.next_attempt_at_ms)
          .add(d.created_at_ms));
}

std::vector<core::webhook_delivery_record> pg_store::list_webhook_deliveries(std::string_view session_id) {
  // The deliveries and their attempts as of one commit: an attempt is recorded with its
  // delivery's new state in one transaction, and a listing must not show half of it.
  const read_snapshot snapshot(*this);
  std::vector<core::webhook_delivery_record> out;
  auto r = db_.run("SELECT " AGW_PG_DELIVERY_COLUMNS " FROM webhook_deliveries WHERE session_id = $1 ORDER BY created_at, seq",
                   params().add(session_id));
  for (int i = 0; i < r.rows(); ++i) out.push_back(read_delivery(r, i));
  if (out.empty()) return out;
  // Every attempt of the session's deliveries in one query.
  auto a = db_.run(
      "SELECT a.delivery_id, a.attempt, a.at, a.status_code, a.error, a.duration_ms FROM webhook_attempts a "
      "JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.session_id = $1 ORDER BY a.delivery_id, a.attempt",
      params().add(session_id));
  for (auto& d : out)
    for (int i = 0; i < a.rows(); ++i) {
      if (a.text(i, 0) != d.id) continue;
      auto code = a.optional_int64(i, 3);
      d.attempts.push_back({a.int64(i, 1), a.int64(i, 2), code ? std::optional<int>(static_cast<int>(*code)) : std::nullopt,
                            a.optional_text(i, 4), a.int64(i, 5)});
    }
  return out;
}

std::optional<core::webhook_delivery_record> pg_store::find_webhook_delivery(std::string_view session_id,
                                                                             std::string_view delivery_id) {
  auto r = db_.run("SELECT " AGW_PG_DELIVERY_COLUMNS " FROM webhook_deliveries WHERE session_id = $1 AND id = $2",
                   params().add(session_id).add(delivery_id));
  if (r.rows() == 0) return std::nullopt;
  return read_delivery(r, 0);
}

std::vector<core::webhook_delivery_record> pg_store::claim_due_webhook_deliveries(std::int64_t now_ms,
                                                                                  std::int64_t claim_until_ms,
                                                                                  std::size_t limit) {
  // One statement (migration 4): the candidates, earliest first, from both tables; of
  // those, the rows no other transaction holds (FOR UPDATE SKIP LOCKED: a node claiming
  // at the same time, or recording an attempt, keeps its rows), re-checked unclaimed on
  // their newest version once locked; each claimed until $2 and returned. Two nodes get
  // disjoint sets; a candidate skipped here is looked at again on the next pass.
  auto r = db_.run(
      "WITH cand AS ("
      "SELECT 'd' AS t, d.id, d.next_attempt_at FROM webhook_deliveries d WHERE d.status = 'pending' AND "
      "d.next_attempt_at <= $1::bigint AND (d.claimed_until IS NULL OR d.claimed_until <= $1::bigint) "
      // An event batch waits for the session's earlier batches (migration 3): in order.
      "AND (d.event_first_id IS NULL OR NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE "
      "e.session_id = d.session_id AND e.status = 'pending' AND e.event_first_id IS NOT NULL AND "
      "e.event_first_id < d.event_first_id)) "
      // And the notices that outlived their session (migration 3).
      "UNION ALL SELECT 'n', id, next_attempt_at FROM session_notices WHERE status = 'pending' AND "
      "next_attempt_at <= $1::bigint AND (claimed_until IS NULL OR claimed_until <= $1::bigint) "
      "ORDER BY next_attempt_at LIMIT $3), "
      "locked_d AS (SELECT id FROM webhook_deliveries WHERE id IN (SELECT id FROM cand WHERE t = 'd') AND "
      "status = 'pending' AND (claimed_until IS NULL OR claimed_until <= $1::bigint) FOR UPDATE SKIP LOCKED), "
      "locked_n AS (SELECT id FROM session_notices WHERE id IN (SELECT id FROM cand WHERE t = 'n') AND "
      "status = 'pending' AND (claimed_until IS NULL OR claimed_until <= $1::bigint) FOR UPDATE SKIP LOCKED), "
      "claimed_d AS (UPDATE webhook_deliveries SET claimed_until = $2::bigint, claimed_by = $4 WHERE id IN (SELECT id FROM "
      "locked_d) "
      "RETURNING " AGW_PG_DELIVERY_COLUMNS
      "), "
      "claimed_n AS (UPDATE session_notices SET claimed_until = $2::bigint, claimed_by = $4 WHERE id IN (SELECT id FROM "
      "locked_n) "
      "RETURNING id, webhook_id, session_id, ''::text, url, payload, status, attempt_count, next_attempt_at, created_at) "
      "SELECT * FROM claimed_d UNION ALL SELECT * FROM claimed_n ORDER BY next_attempt_at",
      params().add(now_ms).add(claim_until_ms).add(static_cast<std::int64_t>(limit)).add(node_id_));
  std::vector<core::webhook_delivery_record> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back(read_delivery(r, i));
  return out;
}

std::optional<std::int64_t> pg_store::next_webhook_due_ms(std::int64_t after_ms) {
  // Due at its schedule, or when a claim on it ends (GREATEST skips a NULL claim).
  auto r = db_.run(
      "SELECT LEAST((SELECT min(GREATEST(next_attempt_at, claimed_until)) FROM webhook_deliveries WHERE status = "
      "'pending' AND GREATEST(next_attempt_at, claimed_until) > $1::bigint), (SELECT min(GREATEST(next_attempt_at, "
      "claimed_until)) FROM session_notices WHERE status = 'pending' AND GREATEST(next_attempt_at, claimed_until) > "
      "$1::bigint))",
      params().add(after_ms));
  return r.optional_int64(0, 0);
}

void pg_store::release_webhook_claims() {
  // This node's claims only (a node restarted under its GATEWAY_NODE_ID after a crash):
  // the other nodes' attempts are under way, and their claims end when they record them.
  db_.run("UPDATE webhook_deliveries SET claimed_until = NULL, claimed_by = NULL WHERE claimed_by = $1", params().add(node_id_));
  db_.run("UPDATE session_notices SET claimed_until = NULL, claimed_by = NULL WHERE claimed_by = $1", params().add(node_id_));
}

bool pg_store::try_lead(std::string_view task) {
  // Transaction-level: released when the job's batch commits or rolls back.
  auto r = db_.run("SELECT pg_try_advisory_xact_lock(hashtext('agw:' || $1::text))::int", params().add(task));
  return r.int64(0, 0) == 1;
}

bool pg_store::record_webhook_attempt(const core::webhook_attempt_outcome& o) {
  // One statement: the delivery moves on and its attempt is appended, or neither (it is gone).
  std::optional<std::int64_t> code;
  if (o.attempt.status_code) code = *o.attempt.status_code;
  auto r = db_.run(
      "WITH moved AS (UPDATE webhook_deliveries SET status = $1, attempt_count = attempt_count + 1, next_attempt_at = $2, "
      "claimed_until = NULL WHERE id = $3 AND status = 'pending' RETURNING id) "
      "INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, error, duration_ms) "
      "SELECT moved.id, (SELECT COALESCE(max(attempt), 0) + 1 FROM webhook_attempts WHERE delivery_id = $3), $4, $5, $6, $7 "
      "FROM moved",
      params()
          .add(o.status)
          .add(o.next_attempt_at_ms)
          .add(o.delivery_id)
          .add(o.attempt.at_ms)
          .add(code)
          .add(o.attempt.error)
          .add(o.attempt.duration_ms));
  if (r.affected() > 0) return true;
  // A notice that outlived its session: its state moves on, its attempts are not kept.
  return db_.run(
                "UPDATE session_notices SET status = $1, attempt_count = attempt_count + 1, next_attempt_at = $2, "
                "claimed_until = NULL WHERE id = $3 AND status = 'pending'",
                params().add(o.status).add(o.next_attempt_at_ms).add(o.delivery_id))
             .affected() > 0;
}

bool pg_store::requeue_webhook_delivery(std::string_view delivery_id, std::int64_t now_ms) {
  return db_.run(
                "UPDATE webhook_deliveries SET status = 'pending', attempt_count = 0, next_attempt_at = $1, claimed_until = NULL "
                "WHERE id = $2",
                params().add(now_ms).add(delivery_id))
             .affected() > 0;
}

#undef AGW_PG_DELIVERY_COLUMNS

}  // namespace agw::persistence::pg
