#include "persistence/postgres/pg_run_leases.hpp"

#include "persistence/postgres/pg_store.hpp"

namespace agw::persistence::pg {
namespace {

constexpr const char* lease_columns = "session_id, run_id, node_id, token, expires_at, abort_requested";

run_lease read_lease(const result& r, int row) {
  return {r.text(row, 0), r.text(row, 1), r.text(row, 2), r.int64(row, 3), r.int64(row, 4), r.text(row, 5) == "t"};
}

}  // namespace

std::optional<run_lease> acquire_run_lease(connection& c, std::string_view session_id, std::string_view run_id,
                                           std::string_view node_id, std::int64_t now_ms, std::int64_t expires_at_ms) {
  // One statement decides a race between nodes: the row's lock serialises them, and
  // the loser's WHERE sees the winner's live lease and updates nothing.
  static const std::string sql =
      std::string("INSERT INTO run_leases (") + lease_columns +
      ") VALUES ($1, $2, $3, 1, $5, false) ON CONFLICT (session_id) DO UPDATE SET run_id = excluded.run_id, "
      "node_id = excluded.node_id, token = run_leases.token + 1, expires_at = excluded.expires_at, "
      "abort_requested = false, run_ended = false WHERE run_leases.run_id IS NULL OR run_leases.expires_at <= $4 "
      "OR run_leases.node_id = excluded.node_id OR run_leases.run_ended RETURNING " +
      lease_columns;
  auto r = c.run(sql, params().add(session_id).add(run_id).add(node_id).add(now_ms).add(expires_at_ms));
  if (r.rows() == 0) return std::nullopt;
  return read_lease(r, 0);
}

core::lease_renewal renew_run_lease(connection& c, std::string_view session_id, std::int64_t token, std::int64_t expires_at_ms) {
  auto r = c.run(
      "UPDATE run_leases SET expires_at = $3 WHERE session_id = $1 AND token = $2 AND run_id IS NOT NULL "
      "RETURNING abort_requested",
      params().add(session_id).add(token).add(expires_at_ms));
  if (r.rows() == 0) return {};
  return {true, r.text(0, 0) == "t"};
}

bool request_run_abort(connection& c, std::string_view session_id, std::string_view run_id) {
  return c.run("UPDATE run_leases SET abort_requested = true WHERE session_id = $1 AND run_id = $2",
               params().add(session_id).add(run_id))
             .affected() > 0;
}

std::vector<bool> leases_held(connection& c, const std::vector<std::pair<std::string, std::int64_t>>& fences) {
  std::vector<bool> out(fences.size(), false);
  if (fences.empty()) return out;
  std::string sql = "SELECT session_id, token FROM run_leases WHERE run_id IS NOT NULL AND (session_id, token) IN (";
  params p;
  for (std::size_t i = 0; i < fences.size(); ++i) {
    const auto n = static_cast<int>(i) * 2;
    sql += (i ? ", ($" : "($") + std::to_string(n + 1) + "::text, $" + std::to_string(n + 2) + "::bigint)";
    p.add(fences[i].first).add(fences[i].second);
  }
  sql += ") FOR SHARE";
  auto r = c.run_once(sql, p);
  for (int row = 0; row < r.rows(); ++row) {
    const auto session = r.text(row, 0);
    const auto token = r.int64(row, 1);
    for (std::size_t i = 0; i < fences.size(); ++i)
      if (fences[i].first == session && fences[i].second == token) out[i] = true;
  }
  return out;
}

bool release_run_lease(connection& c, std::string_view session_id, std::int64_t token) {
  return c.run("UPDATE run_leases SET run_id = NULL, node_id = NULL WHERE session_id = $1 AND token = $2 AND run_id IS NOT NULL",
               params().add(session_id).add(token))
             .affected() > 0;
}

void mark_run_ended(connection& c, std::string_view session_id, std::int64_t token) {
  c.run("UPDATE run_leases SET run_ended = true WHERE session_id = $1 AND token = $2 AND run_id IS NOT NULL",
        params().add(session_id).add(token));
}

std::optional<run_lease> find_run_lease(connection& c, std::string_view session_id) {
  static const std::string sql =
      // FOR SHARE: a check made with it (a run's final checkpoint is fenced by it) holds
      // until the transaction ends; a takeover waits for it rather than slipping in between.
      std::string("SELECT ") + lease_columns + " FROM run_leases WHERE session_id = $1 AND run_id IS NOT NULL FOR SHARE";
  auto r = c.run(sql, params().add(session_id));
  if (r.rows() == 0) return std::nullopt;
  return read_lease(r, 0);
}

std::vector<run_lease> lapsed_run_leases(connection& c, std::int64_t now_ms, std::size_t limit) {
  static const std::string sql = std::string("SELECT ") + lease_columns +
                                 " FROM run_leases WHERE run_id IS NOT NULL AND expires_at <= $1 ORDER BY expires_at LIMIT $2";
  auto r = c.run(sql, params().add(now_ms).add(static_cast<std::int64_t>(limit)));
  std::vector<run_lease> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back(read_lease(r, i));
  return out;
}

bool append_events_fenced(connection& c, const core::event_batch_record& b, std::int64_t token) {
  // The lease row is locked (FOR SHARE) while the row goes in: a taking of the lease
  // either committed before (this insert sees the new token and writes nothing) or
  // waits until this transaction ends (and the events are the old owner's last).
  auto r = c.run(
      "INSERT INTO event_batches (session_id, first_id, last_id, frames, created_at) "
      "SELECT $1::text, $2::bigint, $3::bigint, $4::bytea, $5::bigint WHERE EXISTS (SELECT 1 FROM run_leases WHERE session_id = "
      "$1 AND token = $6 "
      "AND run_id IS NOT NULL FOR SHARE) "
      "ON CONFLICT (session_id, first_id) DO UPDATE SET last_id = excluded.last_id, frames = excluded.frames, "
      "created_at = excluded.created_at WHERE excluded.last_id > event_batches.last_id",
      params().add(b.session_id).add(b.first_id).add(b.last_id).add_bytes(b.frames).add(b.created_at_ms).add(token));
  // A retry that changed nothing is not fenced: the lease check is what says so.
  if (r.affected() > 0) return true;
  auto held = c.run("SELECT 1 FROM run_leases WHERE session_id = $1 AND token = $2 AND run_id IS NOT NULL",
                    params().add(b.session_id).add(token));
  return held.rows() > 0;
}

// --- pg_store's run_leases port ---

std::optional<core::run_lease_record> pg_store::acquire_run_lease(std::string_view session_id, std::string_view run_id,
                                                                  std::string_view node_id, std::int64_t now_ms,
                                                                  std::int64_t expires_at_ms) {
  return pg::acquire_run_lease(db_, session_id, run_id, node_id, now_ms, expires_at_ms);
}
core::lease_renewal pg_store::renew_run_lease(std::string_view session_id, std::int64_t token, std::int64_t expires_at_ms) {
  return pg::renew_run_lease(db_, session_id, token, expires_at_ms);
}
bool pg_store::release_run_lease(std::string_view session_id, std::int64_t token) {
  return pg::release_run_lease(db_, session_id, token);
}
std::optional<core::run_lease_record> pg_store::find_run_lease(std::string_view session_id) {
  return pg::find_run_lease(db_, session_id);
}
std::vector<core::run_lease_record> pg_store::lapsed_run_leases(std::int64_t now_ms, std::size_t limit) {
  return pg::lapsed_run_leases(db_, now_ms, limit);
}
bool pg_store::request_run_abort(std::string_view session_id, std::string_view run_id) {
  return pg::request_run_abort(db_, session_id, run_id);
}

}  // namespace agw::persistence::pg
