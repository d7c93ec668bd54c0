#pragma once
// Start-up repair, before the server accepts (after the store made every committed
// event readable: persistence::prepare_database): runs that a crash cut short are
// closed as "interrupted" (their streamed content, read back from the event
// log, is persisted and followers get error + done), and projections that
// drifted from their checkpoint are rebuilt, and the webhook claims the process
// before left are released. Runs on one store connection; only when no other
// process serves the store (gateway/main.cpp).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.hpp"
#include "core/storage/store_connection.hpp"

namespace agw::core {

struct recovery_report {
  std::int64_t sessions_checked = 0;
  std::int64_t runs_interrupted = 0;
  std::int64_t projections_rebuilt = 0;
};

// Who repairs (docs/scale-out.md, "Run ownership"): a run is closed only under its
// session's lease, taken for the repair and released with it, so a run another node
// still owns (its lease is live) is left alone and two nodes never repair one run.
// SQLite grants every lease.
struct repair_lease {
  std::string node_id = "startup";
  std::int64_t lease_ms = 10000;
};

// Each session is repaired in its own transaction; what it writes is stamped with `time`.
recovery_report recover_at_startup(store_connection& c, const clock& time, const repair_lease& lease = {});

// A survivor's repair of one session whose run's lease lapsed (its node stopped
// renewing): the same closing as at start-up, under the lease, in the caller's
// transaction (a store job). Returns the session's last event id when a run was closed.
std::optional<std::int64_t> repair_lapsed_run(store_connection& c, const clock& time, std::string_view session_id,
                                              const repair_lease& lease);

}  // namespace agw::core
