#pragma once
// Run ownership across nodes, on PostgreSQL (docs/scale-out.md, "Design for the
// rest"): a session's live run is held by one node through a lease row (node id,
// expiry), renewed while the run lives. Each taking of a lease increments the
// session's fencing token; an event batch written with a token that is no longer
// the session's is refused, so a node whose lease was taken (it stalled, or was
// cut off) cannot commit another event after the new owner started.
//
// These are the store primitives behind core's run_leases port (pg_store) and the
// event writer's fencing. Every function runs one statement on the caller's
// connection (a store thread).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/storage/run_leases.hpp"
#include "core/store_records.hpp"
#include "persistence/postgres/pg_connection.hpp"

namespace agw::persistence::pg {

using run_lease = core::run_lease_record;

// Takes the session's lease for run_id on node_id until expires_at_ms when no run
// holds it, its holder's lease lapsed (expires_at <= now_ms) or node_id holds it (that
// node's channel reservation decided: its previous run's done is committed). Returns the new
// lease (its token one above the last), or nullopt: another run holds it (the 409).
std::optional<run_lease> acquire_run_lease(connection& c, std::string_view session_id, std::string_view run_id,
                                           std::string_view node_id, std::int64_t now_ms, std::int64_t expires_at_ms);
// Moves the expiry on while `token` still holds the lease; false: it was taken. Also
// says whether another node asked the run to stop (request_run_abort).
core::lease_renewal renew_run_lease(connection& c, std::string_view session_id, std::int64_t token, std::int64_t expires_at_ms);
// Records an abort of run_id for its owner's next renewal (migration 5); false: that run
// holds no lease.
bool request_run_abort(connection& c, std::string_view session_id, std::string_view run_id);
// Which of (session id, token) still hold their session's lease, each row locked FOR
// SHARE until the transaction ends (the event writer's fence, one round trip for a
// writer cycle): a taking of the lease waits for this transaction.
std::vector<bool> leases_held(connection& c, const std::vector<std::pair<std::string, std::int64_t>>& fences);
// The run ended: the lease is free (the token stays, so the next one is larger).
bool release_run_lease(connection& c, std::string_view session_id, std::int64_t token);
// The run's done is in the log (written in this transaction): from its commit on, any
// node may take the lease (migration 6), so a client that answers `done` at once on
// another node never meets the 409 of a run that has ended but not yet released it.
void mark_run_ended(connection& c, std::string_view session_id, std::int64_t token);
// The session's current lease, if a run holds one (lapsed or not).
std::optional<run_lease> find_run_lease(connection& c, std::string_view session_id);
// Leases whose holder stopped renewing (expires_at <= now_ms), oldest expiry first.
std::vector<run_lease> lapsed_run_leases(connection& c, std::int64_t now_ms, std::size_t limit);
// Appends the batch only while `token` holds the session's lease; false: fenced out
// (nothing written).
bool append_events_fenced(connection& c, const core::event_batch_record& batch, std::int64_t token);

}  // namespace agw::persistence::pg
