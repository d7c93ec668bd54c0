#pragma once
// Run ownership across nodes, on PostgreSQL (docs/scale-out.md, "Design for the
// rest"): a session's live run is held by one node through a lease row (node id,
// expiry), renewed while the run lives. Each taking of a lease increments the
// session's fencing token; an event batch written with a token that is no longer
// the session's is refused, so a node whose lease was taken (it stalled, or was
// cut off) cannot commit another event after the new owner started.
//
// These are the store primitives; core does not call them yet (the run service,
// the channel's renewal timer and a survivor's sweep are the wiring still to do).
// Every function runs one statement on the caller's connection (a store thread).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/store_records.hpp"
#include "persistence/postgres/pg_connection.hpp"

namespace agw::persistence::pg {

struct run_lease {
  std::string session_id;
  std::string run_id;
  std::string node_id;
  std::int64_t token = 0;
  std::int64_t expires_at_ms = 0;
};

// Takes the session's lease for run_id on node_id until expires_at_ms when no run
// holds it or its holder's lease lapsed (expires_at <= now_ms). Returns the new
// lease (its token one above the last), or nullopt: another run holds it (the 409).
std::optional<run_lease> acquire_run_lease(connection& c, std::string_view session_id, std::string_view run_id,
                                           std::string_view node_id, std::int64_t now_ms, std::int64_t expires_at_ms);
// Moves the expiry on while `token` still holds the lease; false: it was taken.
bool renew_run_lease(connection& c, std::string_view session_id, std::int64_t token, std::int64_t expires_at_ms);
// The run ended: the lease is free (the token stays, so the next one is larger).
bool release_run_lease(connection& c, std::string_view session_id, std::int64_t token);
// The session's current lease, if a run holds one (lapsed or not).
std::optional<run_lease> find_run_lease(connection& c, std::string_view session_id);
// Leases whose holder stopped renewing (expires_at <= now_ms), oldest expiry first.
std::vector<run_lease> lapsed_run_leases(connection& c, std::int64_t now_ms, std::size_t limit);
// Appends the batch only while `token` holds the session's lease; false: fenced out
// (nothing written).
bool append_events_fenced(connection& c, const core::event_batch_record& batch, std::int64_t token);

}  // namespace agw::persistence::pg
