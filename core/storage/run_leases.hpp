#pragma once
// Port: run ownership across nodes (docs/scale-out.md, "Run ownership"). A session's
// live run is held by one node through a lease (node id, expiry), renewed while the
// run lives. Each taking of a lease raises the session's fencing token; event batches
// written with a token that no longer holds the lease are refused (fenced_out), so a
// node whose lease was taken cannot commit another event.
//
// A single-process store (SQLite) has one node: its channels' reservations decide, and
// it grants every lease (the core path stays the same). PostgreSQL decides between
// nodes. Called on a store connection's thread, inside the job's transaction.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agw::core {

struct run_lease_record {
  std::string session_id;
  std::string run_id;
  std::string node_id;
  std::int64_t token = 0;  // the fencing token: only grows per session (0: a store that does not fence)
  std::int64_t expires_at_ms = 0;
  bool abort_requested = false;  // another node asked the run to stop
};

// What a renewal found.
struct lease_renewal {
  bool held = false;             // false: the lease was taken (fenced) or released
  bool abort_requested = false;  // an abort was recorded for the run (another node's POST)
  explicit operator bool() const { return held; }
};

class run_leases {
 public:
  virtual ~run_leases() = default;
  // Takes the session's lease for run_id on node_id until expires_at_ms when no run
  // holds it, its holder's lease lapsed (expires_at <= now_ms), or node_id holds it
  // itself (the node's own reservation decided). nullopt: another node's run holds it.
  virtual std::optional<run_lease_record> acquire_run_lease(std::string_view session_id, std::string_view run_id,
                                                            std::string_view node_id, std::int64_t now_ms,
                                                            std::int64_t expires_at_ms) = 0;
  virtual lease_renewal renew_run_lease(std::string_view session_id, std::int64_t token, std::int64_t expires_at_ms) = 0;
  // The run ended: the lease is free (the token stays, so the next one is larger).
  virtual bool release_run_lease(std::string_view session_id, std::int64_t token) = 0;
  // The session's current lease, if a run holds one (lapsed or not).
  virtual std::optional<run_lease_record> find_run_lease(std::string_view session_id) = 0;
  // Leases whose holder stopped renewing (expires_at <= now_ms), oldest expiry first.
  virtual std::vector<run_lease_record> lapsed_run_leases(std::int64_t now_ms, std::size_t limit) = 0;
  // Records an abort for run_id, which its owner sees at its next renewal; false: that
  // run holds no lease.
  virtual bool request_run_abort(std::string_view session_id, std::string_view run_id) = 0;
};

// The single-process store's leases: every one granted (with token 0: unfenced), none recorded.
class local_run_leases : public run_leases {
 public:
  std::optional<run_lease_record> acquire_run_lease(std::string_view session_id, std::string_view run_id,
                                                    std::string_view node_id, std::int64_t, std::int64_t expires_at_ms) override {
    // Token 0: nothing to fence against (batches and checkpoints go unchecked, no renewals).
    return run_lease_record{std::string(session_id), std::string(run_id), std::string(node_id), 0, expires_at_ms, false};
  }
  lease_renewal renew_run_lease(std::string_view, std::int64_t, std::int64_t) override { return {true, false}; }
  bool release_run_lease(std::string_view, std::int64_t) override { return true; }
  std::optional<run_lease_record> find_run_lease(std::string_view) override { return std::nullopt; }
  std::vector<run_lease_record> lapsed_run_leases(std::int64_t, std::size_t) override { return {}; }
  bool request_run_abort(std::string_view, std::string_view) override { return false; }
};

}  // namespace agw::core
