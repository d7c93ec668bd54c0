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

#include "core/clock.hpp"
#include "core/storage/store_connection.hpp"

namespace agw::core {

struct recovery_report {
  std::int64_t sessions_checked = 0;
  std::int64_t runs_interrupted = 0;
  std::int64_t projections_rebuilt = 0;
};

// Each session is repaired in its own transaction; what it writes is stamped with `time`.
recovery_report recover_at_startup(store_connection& c, const clock& time);

}  // namespace agw::core
