#pragma once
// Process-wide counters, gauges and fixed-bucket histograms for /metrics.
// Lock-free: any thread bumps them with relaxed atomics and no allocation (the
// per-event ones run on the hot path). Core knows nothing of Prometheus:
// gateway/metrics_exporter turns a snapshot into prometheus-cpp families when
// /metrics is scraped, so a snapshot may be a few increments stale.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/events/event_type.hpp"
#include "core/histogram.hpp"

namespace agw::core {

// Requests by route (the router's index of the matched route) and status.
struct request_counts {
  static constexpr std::size_t max_routes = 63;         // the router refuses more
  static constexpr std::size_t unmatched = max_routes;  // 404/405 and refused targets
  static constexpr std::array<unsigned, 20> statuses{200, 201, 202, 204, 400, 401, 403, 404, 405, 408,
                                                     409, 413, 415, 422, 429, 431, 500, 502, 503, 504};
  static constexpr std::size_t other_status = statuses.size();  // any other status
  // The slot of a status in a route's row.
  static std::size_t slot_of(unsigned status) noexcept;

  void count(std::size_t route, unsigned status) noexcept {
    counts[route < max_routes ? route : unmatched][slot_of(status)].fetch_add(1, std::memory_order_relaxed);
  }
  std::array<std::array<std::atomic<std::uint64_t>, statuses.size() + 1>, max_routes + 1> counts{};
};

inline constexpr std::size_t event_type_count = static_cast<std::size_t>(event_type::reconnected) + 1;

struct metrics {
  std::atomic<std::uint64_t> http_requests{0};
  std::atomic<std::uint64_t> http_responses_4xx{0};
  std::atomic<std::uint64_t> http_responses_5xx{0};
  std::atomic<std::int64_t> http_connections_open{0};
  std::atomic<std::uint64_t> runs_started{0};
  std::atomic<std::uint64_t> runs_completed{0};
  std::atomic<std::uint64_t> runs_aborted{0};
  std::atomic<std::uint64_t> runs_failed{0};
  std::atomic<std::int64_t> runs_live{0};
  // Runs admitted and not yet ended, those still being persisted included: the
  // GATEWAY_MAX_RUNS count, and what a drain waits for (run_service::admit_run).
  std::atomic<std::int64_t> runs_admitted{0};
  std::atomic<std::uint64_t> events_published{0};
  std::atomic<std::uint64_t> event_batches_committed{0};
  std::atomic<std::uint64_t> runs_fenced_out{0};  // runs stopped because another node took their lease
  std::atomic<std::uint64_t> runs_taken_over{0};  // lapsed runs of other nodes this node closed as interrupted
  std::atomic<std::uint64_t> events_followed{0};  // committed by another node, taken on here (session_channel::follow_log)
  // The cross-node fan-out (core/storage/live_fanout.hpp; zero on a single node).
  std::atomic<std::uint64_t> fanout_published{0};   // batches handed to the other nodes
  std::atomic<std::uint64_t> fanout_received{0};    // other nodes' batches heard
  std::atomic<std::uint64_t> fanout_dropped{0};     // not sent (queue full, or no connection): followers read the log
  std::atomic<std::int64_t> fanout_connected{0};    // 1 while the subscriber connection is up
  std::atomic<std::uint64_t> fanout_reconnects{0};  // connections made again after a loss
  std::atomic<std::uint64_t> fanout_log_polls{0};   // follower reads of the log (log_follower)
  std::atomic<std::int64_t> channels_open{0};       // sessions with a channel in memory (session_hub)
  std::atomic<std::uint64_t> channels_evicted{0};   // channels dropped because they were idle
  std::atomic<std::int64_t> sse_streams_open{0};
  std::atomic<std::uint64_t> sse_frames_written{0};
  std::atomic<std::uint64_t> sse_slow_subscribers_dropped{0};  // stalled writes cut
  std::atomic<std::uint64_t> sse_subscribers_behind{0};        // live → catching up
  std::atomic<std::uint64_t> store_rejected{0};
  std::atomic<std::uint64_t> webhooks_delivered{0};
  std::atomic<std::uint64_t> webhooks_failed{0};
  std::atomic<std::uint64_t> webhooks_retried{0};

  // Requests as the router answered them, and how long the handler took to answer
  // (for a stream: until its head was handed over).
  request_counts requests;
  histogram request_seconds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  // Events released to subscribers, by type (indexed by event_type).
  std::array<std::atomic<std::uint64_t>, event_type_count> events_by_type{};
  // Subscribers of sessions' event sequences, and those catching up (replaying, or lagging).
  std::atomic<std::int64_t> subscribers_open{0};
  std::atomic<std::int64_t> subscribers_catching_up{0};
  // Replay and catch-up reads, by where they were served from.
  std::atomic<std::uint64_t> replay_reads_ring{0};
  std::atomic<std::uint64_t> replay_reads_log{0};
  // Per committed event batch: seconds from its oldest event's publish to its release to
  // subscribers, the longest any event of it waited to be durable, or held back by the
  // channel's release spacing (commit_pipeline).
  histogram event_commit_wait_seconds{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1};
  histogram webhook_attempt_seconds{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  // Upstream model streams (the openai provider observes these).
  histogram upstream_first_token_seconds{0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64};
  histogram upstream_tokens_per_second{1, 5, 10, 20, 40, 80, 160, 320, 640};

  void count_event(event_type type) noexcept {
    events_by_type[static_cast<std::size_t>(type)].fetch_add(1, std::memory_order_relaxed);
  }
  // Seconds from the upstream request to its first token.
  void observe_upstream_first_token(double seconds) noexcept { upstream_first_token_seconds.observe(seconds); }
  // Output tokens per second of one upstream stream, from its first token to its end.
  void observe_upstream_tokens_per_second(double rate) noexcept { upstream_tokens_per_second.observe(rate); }
};

}  // namespace agw::core
