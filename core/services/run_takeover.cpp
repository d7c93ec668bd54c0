#include "core/services/run_takeover.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/clock.hpp"
#include "core/metrics.hpp"
#include "core/periodic.hpp"
#include "core/recovery.hpp"
#include "core/store_executor.hpp"

namespace agw::core {

namespace net = boost::asio;

run_takeover::run_takeover(store_executor& store, metrics& stats, const clock& time, options opts)
    : store_(store), stats_(stats), clock_(time), opts_(std::move(opts)) {}

void run_takeover::start(net::any_io_executor executor) { net::co_spawn(executor, loop(shared_from_this()), net::detached); }

// The parameter (unnamed) is the frame's copy of the owner: it keeps `this` alive while the loop runs.
net::awaitable<void> run_takeover::loop(std::shared_ptr<run_takeover>) {
  auto pass = [this]() -> net::awaitable<void> {
    auto sweeping = sweep();
    co_await std::move(sweeping);
  };
  // A failed sweep leaves the lease lapsed: the next interval (here or on another node) closes the run.
  auto repeating = repeat_every(clock_, opts_.interval, stopped_, pass, "run takeover sweep");
  co_await std::move(repeating);
}

net::awaitable<std::size_t> run_takeover::sweep() {
  auto find = [now = clock_.wall_ms(), limit = opts_.batch](store_connection& c) {
    std::vector<std::string> out;
    for (const auto& l : c.lapsed_run_leases(now, limit)) out.push_back(l.session_id);
    return out;
  };
  auto lapsed = co_await store_.async_read(std::move(find), net::use_awaitable);
  std::size_t closed = 0;
  const repair_lease lease{opts_.node_id, static_cast<std::int64_t>(opts_.lease.count())};
  for (const auto& session_id : lapsed) {
    if (stopped_) break;
    // One job per session: taking the lease, the repair and giving it back commit together.
    auto repair = [session_id, lease, &time = clock_](store_connection& c) {
      return repair_lapsed_run(c, time, session_id, lease);
    };
    std::optional<std::int64_t> last_id;
    try {
      last_id = co_await store_.async_write(std::move(repair), net::use_awaitable);
    } catch (const std::exception& e) {
      spdlog::error("session {}: closing the run of a lapsed lease failed: {}", session_id, e.what());
      continue;
    }
    if (!last_id) continue;
    ++closed;
    stats_.runs_taken_over++;
    spdlog::warn("session {}: its run's node stopped renewing the lease; the run is closed as interrupted", session_id);
    if (opts_.on_repaired) opts_.on_repaired(session_id, *last_id);
  }
  co_return closed;
}

}  // namespace agw::core
