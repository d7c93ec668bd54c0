#include "core/services/session_sweeper.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>

#include "core/clock.hpp"
#include "core/periodic.hpp"
#include "core/services/session_service.hpp"
#include "core/session_hub.hpp"
#include "core/store_executor.hpp"

namespace agw::core {

namespace net = boost::asio;

session_sweeper::session_sweeper(store_executor& store, session_hub& hub, const clock& time, options opts, expiring_hook expiring,
                                 expired_hook expired)
    : store_(store), hub_(hub), clock_(time), opts_(opts), expiring_(std::move(expiring)), expired_(std::move(expired)) {}

void session_sweeper::start(net::any_io_executor executor) { net::co_spawn(executor, loop(shared_from_this()), net::detached); }

// The parameter (unnamed) is the frame's copy of the owner: it keeps `this` alive while the loop runs.
net::awaitable<void> session_sweeper::loop(std::shared_ptr<session_sweeper>) {
  auto pass = [this]() -> net::awaitable<void> {
    auto sweeping = sweep();
    co_await std::move(sweeping);
  };
  // A failed sweep only delays expiry: the next interval looks again.
  auto repeating = repeat_every(clock_, opts_.interval, stopped_, pass, "session sweep");
  co_await std::move(repeating);
}

net::awaitable<std::size_t> session_sweeper::sweep() {
  std::size_t total = 0;
  for (bool more = true; more && !stopped_;) {
    auto batch = sweep_batch(more);
    total += co_await std::move(batch);
  }
  co_return total;
}

net::awaitable<std::size_t> session_sweeper::sweep_batch(bool& more) {
  const auto now = clock_.wall_ms();
  auto find = [now, ttl = opts_.default_ttl_ms, limit = opts_.batch](store_connection& c) {
    return c.idle_sessions(now, ttl, limit);
  };
  auto candidates = co_await store_.async_read(std::move(find), net::use_awaitable);
  more = candidates.size() >= opts_.batch;
  // A live run does not protect its session: its start was the last activity, and a run
  // going for longer than the TTL is ended (aborted) with it.
  std::vector<std::string> ids;
  for (const auto& s : candidates) ids.push_back(s.id);
  if (ids.empty()) co_return 0;
  auto expire = [ids, now, ttl = opts_.default_ttl_ms,
                 hook = expiring_](store_connection& c) -> std::optional<std::vector<std::pair<std::string, std::string>>> {
    // One node at a time (several may share a PostgreSQL store): two sweeps expiring one
    // session would both write its session.expired notice. Held until this job's commit.
    if (!c.try_lead("session-ttl-sweep")) return std::nullopt;
    std::vector<std::pair<std::string, std::string>> gone;  // id, thread id
    for (const auto& id : ids) {
      auto s = c.find_session(id);
      auto expiry = s ? expiry_of(*s, ttl) : std::nullopt;
      if (!expiry || *expiry > now) continue;  // touched since it was found
      if (hook) hook(c, *s);
      if (c.delete_session(id)) gone.emplace_back(id, s->thread_id);
    }
    return gone;
  };
  auto expired = co_await store_.async_write(std::move(expire), net::use_awaitable);
  if (!expired) {
    // Another node's sweep holds the lock right now: it expires these; this pass ends.
    more = false;
    co_return 0;
  }
  auto gone = std::move(*expired);
  // Rows first, then the live side, as DELETE does.
  for (const auto& [id, thread] : gone) hub_.session_deleted(id, thread);
  if (!gone.empty()) {
    spdlog::info("session sweep: {} idle sessions expired", gone.size());
    if (expired_) expired_(gone.size());
  }
  // Every candidate was touched meanwhile: the next interval looks again.
  if (gone.empty()) more = false;
  co_return gone.size();
}

}  // namespace agw::core
