#pragma once
// Delivers the webhook outbox: a loop on its own strand claims pending
// deliveries that are due (at most webhook_concurrency in flight; a claim keeps
// every other node, on a shared PostgreSQL, from attempting the same delivery
// until the attempt is recorded or the claim expires), sends each
// with outbound_http, records the attempt and the delivery's next state in one
// write (through core::webhook_service, which owns the outbox's storage), and
// sleeps until the next one is due or it is woken (a run wrote an outbox row, a
// redelivery, an attempt finished). Everything it knows lives in
// the database, so a restart resumes where the last process stopped
// (at-least-once: an attempt cut by a crash is sent again). Due times, attempt
// stamps and its sleeps are the injected clock's.
// Executor: its own strand; wake() and stop() may be called from any thread.
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/strand.hpp>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_set>

#include "core/clock.hpp"
#include "core/metrics.hpp"
#include "core/services/webhook_service.hpp"
#include "core/settings.hpp"
#include "core/webhooks/address_policy.hpp"
#include "gateway/webhooks/outbound_http.hpp"

namespace agw::gateway {

class webhook_dispatcher {
 public:
  webhook_dispatcher(boost::asio::any_io_executor executor, core::webhook_service& deliveries, const core::settings& config,
                     core::metrics& stats, const core::clock& time);

  void start();
  // Thread-safe: look for due deliveries now.
  void wake();
  // Draining: start no new attempt (pending rows wait for the next start).
  void stop();
  // Draining: one last look for deliveries due now (each attempted once more), then as
  // stop(); attempts under way finish (or are cut by the exit and stay pending).
  void drain();
  // Attempts under way; any thread.
  std::size_t attempts_in_flight() const { return attempts_in_flight_.load(); }
  // The loop has ended (after stop(), or drain()'s last pass); any thread.
  bool loop_ended() const { return loop_ended_.load(); }

  const core::address_policy& policy() const { return policy_; }

 private:
  boost::asio::awaitable<void> loop();
  boost::asio::awaitable<void> deliver(core::webhook_delivery_record d);
  void finished(const std::string& delivery_id);

  boost::asio::strand<boost::asio::any_io_executor> strand_;
  core::webhook_service& deliveries_;  // the outbox rows: due ones, next due time, attempts
  const core::settings& config_;
  core::metrics& stats_;
  const core::clock& clock_;
  core::address_policy policy_;
  outbound_http client_;
  std::optional<std::string> signing_key_;
  std::int64_t claim_ms_;                      // how long a picked delivery stays claimed
  std::unique_ptr<core::wait_timer> timer_;    // on strand_: the loop's sleep, cut short by a wake
  std::unordered_set<std::string> in_flight_;  // strand only
  bool woken_ = false;                         // strand only: a wake arrived while the loop was busy
  bool stopped_ = false;                       // strand only
  bool last_pass_ = false;                     // strand only: drain() asked for one final pass
  std::atomic<std::size_t> attempts_in_flight_{0};
  std::atomic<bool> loop_ended_{false};
  std::mt19937_64 rng_;
};

}  // namespace agw::gateway
