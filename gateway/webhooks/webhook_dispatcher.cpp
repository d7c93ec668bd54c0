#include "gateway/webhooks/webhook_dispatcher.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/webhooks/webhook_secret.hpp"
#include "core/webhooks/webhook_signature.hpp"

#ifndef GATEWAY_VERSION
#define GATEWAY_VERSION "0"
#endif

namespace agw::gateway {

namespace net = boost::asio;

namespace {

// With nothing due, look again after this long anyway (a safety net for a missed wake).
constexpr std::int64_t idle_poll_ms = 5000;
// After a storage error, wait before trying again.
constexpr std::int64_t store_retry_ms = 1000;
// A claim outlives the attempt it covers by this much (docs/scale-out.md, "Webhooks").
constexpr std::chrono::seconds claim_margin{30};

// How long a delivery this node picks stays claimed: its attempt's whole budget (connect,
// then send and read the response header) plus the margin, so a live node always
// records its attempt (which releases the claim) before another node may take the
// delivery; a dead node's claim expires after this.
std::int64_t claim_ms_of(const core::settings& config) {
  const auto budget = config.webhook_connect_timeout + config.webhook_timeout + claim_margin;
  return std::chrono::duration_cast<std::chrono::milliseconds>(budget).count();
}

}  // namespace

webhook_dispatcher::webhook_dispatcher(net::any_io_executor executor, core::webhook_service& deliveries,
                                       const core::settings& config, core::metrics& stats, const core::clock& time)
    : strand_(net::make_strand(executor)),
      deliveries_(deliveries),
      config_(config),
      stats_(stats),
      clock_(time),
      policy_(config.webhook_allow_private, config.webhook_allowlist),
      client_(config),
      claim_ms_(claim_ms_of(config)),
      timer_(time.make_timer(strand_)),
      rng_(std::random_device{}()) {
  if (!config.webhook_secret.empty()) signing_key_ = core::decode_webhook_secret(config.webhook_secret);
}

void webhook_dispatcher::start() {
  net::co_spawn(strand_, loop(), [](std::exception_ptr e) {
    if (e) spdlog::error("webhook dispatcher stopped by an unexpected exception");
  });
}

void webhook_dispatcher::wake() {
  net::post(strand_, [this] {
    woken_ = true;
    timer_->cancel();
  });
}

void webhook_dispatcher::stop() {
  net::post(strand_, [this] {
    stopped_ = true;
    timer_->cancel();
  });
}

void webhook_dispatcher::drain() {
  net::post(strand_, [this] {
    last_pass_ = true;
    woken_ = true;
    timer_->cancel();
  });
}

net::awaitable<void> webhook_dispatcher::loop() {
  while (!stopped_) {
    woken_ = false;
    const bool final_pass = last_pass_;
    std::int64_t wait_ms = idle_poll_ms;
    try {
      const auto now = clock_.wall_ms();
      const std::size_t room = config_.webhook_concurrency - std::min(config_.webhook_concurrency, in_flight_.size());
      bool more_due = false;
      if (room > 0) {
        // Claimed rows (ours in flight, other nodes') are not handed out: ask for the free slots.
        const std::size_t limit = room;
        auto picking = deliveries_.claim_due(now, limit, claim_ms_);
        auto due = co_await std::move(picking);
        more_due = due.size() == limit;
        for (auto& d : due) {
          if (stopped_ || in_flight_.size() >= config_.webhook_concurrency) break;
          if (!in_flight_.insert(d.id).second) continue;
          attempts_in_flight_++;
          net::co_spawn(strand_, deliver(std::move(d)), net::detached);
        }
      } else {
        more_due = true;  // unknown: a finishing attempt wakes the loop to look
      }
      if (more_due) {
        // Due rows are left over: go again at once if a slot is free, else when an attempt finishes.
        wait_ms = in_flight_.size() < config_.webhook_concurrency ? 0 : idle_poll_ms;
      } else {
        // Every due row is in flight (here or on another node): sleep until the next one falls due.
        auto asking = deliveries_.next_due_ms(now);
        auto next = co_await std::move(asking);
        if (next) wait_ms = std::clamp<std::int64_t>(*next - clock_.wall_ms(), 0, idle_poll_ms);
      }
    } catch (const std::exception& e) {
      spdlog::warn("webhook dispatcher: storage error: {}", e.what());
      wait_ms = store_retry_ms;
    }
    if (final_pass) stopped_ = true;
    if (woken_ || stopped_) continue;
    if (wait_ms == 0) continue;
    auto waiting = timer_->wait_until(clock_.steady_now() + std::chrono::milliseconds(wait_ms));
    co_await std::move(waiting);
  }
  loop_ended_ = true;
}

net::awaitable<void> webhook_dispatcher::deliver(core::webhook_delivery_record d) {
  core::attempt_result result;
  const auto at = clock_.wall_ms();
  auto parsed = core::parse_callback_url(d.url);
  if (auto* why = std::get_if<std::string>(&parsed)) {
    result.error = *why;  // stored before a rule change: fails without retries
  } else {
    const auto timestamp = at / 1000;
    header_list headers{{"content-type", "application/json"},
                        {"user-agent", "agent-gateway/" GATEWAY_VERSION},
                        {"webhook-id", d.webhook_id},
                        {"webhook-timestamp", std::to_string(timestamp)}};
    if (signing_key_)
      headers.emplace_back("webhook-signature", core::webhook_signature(*signing_key_, d.webhook_id, timestamp, d.payload));
    auto posting = client_.post(std::get<core::callback_target>(parsed), policy_, headers, d.payload);
    result = co_await std::move(posting);
  }
  auto decision =
      core::decide_after_attempt(result, d.round_attempts + 1, config_.webhook_retry_schedule, clock_.wall_ms(), rng_);
  if (std::holds_alternative<std::string>(parsed)) decision = {"failed", std::nullopt};

  core::webhook_attempt_outcome outcome{
      d.id, {0, at, result.status_code, std::nullopt, result.duration_ms}, decision.status, decision.next_attempt_at_ms};
  if (!result.error.empty()) outcome.attempt.error = result.error;
  stats_.webhook_attempt_seconds.observe(static_cast<double>(result.duration_ms) / 1000.0);
  if (decision.status == "delivered")
    stats_.webhooks_delivered++;
  else if (decision.status == "failed")
    stats_.webhooks_failed++;
  else
    stats_.webhooks_retried++;
  // The URL without its query: receivers often put a token there (no secrets at info).
  spdlog::info("webhook {} to {}: attempt {} -> {} ({})", d.webhook_id, std::string_view(d.url).substr(0, d.url.find('?')),
               d.round_attempts + 1, result.status_code ? std::to_string(*result.status_code) : result.error, decision.status);

  std::exception_ptr failure;
  try {
    auto recording = deliveries_.record_attempt(std::move(outcome));
    co_await std::move(recording);
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) {
    // The row stays pending (at-least-once): it is sent again once its claim expires.
    spdlog::warn("webhook {}: could not record its attempt; it will be sent again", d.webhook_id);
    auto pausing = clock_.sleep_for(std::chrono::milliseconds(store_retry_ms));
    co_await std::move(pausing);
  }
  finished(d.id);
}

void webhook_dispatcher::finished(const std::string& delivery_id) {
  in_flight_.erase(delivery_id);
  attempts_in_flight_--;
  woken_ = true;
  timer_->cancel();
}

}  // namespace agw::gateway
