#pragma once
// Process-wide counters and gauges for /metrics. Lock-free atomics: any thread
// may bump them; render() reads a snapshot that may be a few increments stale.
#include <atomic>
#include <cstdint>
#include <string>

namespace agw::core {

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
  std::atomic<std::uint64_t> events_published{0};
  std::atomic<std::uint64_t> event_batches_committed{0};
  std::atomic<std::int64_t> sse_streams_open{0};
  std::atomic<std::uint64_t> sse_frames_written{0};
  std::atomic<std::uint64_t> sse_slow_subscribers_dropped{0};  // stalled writes cut
  std::atomic<std::uint64_t> sse_subscribers_behind{0};        // live → catching up
  std::atomic<std::uint64_t> store_rejected{0};
  std::atomic<std::uint64_t> webhooks_delivered{0};
  std::atomic<std::uint64_t> webhooks_failed{0};
  std::atomic<std::uint64_t> webhooks_retried{0};

  // Prometheus text exposition format.
  std::string render() const;
};

}  // namespace agw::core
