#include "core/metrics.hpp"

#include <sstream>

namespace agw::core {

std::string metrics::render() const {
  std::ostringstream out;
  auto counter = [&](const char* name, const char* help, const auto& value) {
    out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " counter\n" << name << ' ' << value.load() << '\n';
  };
  auto gauge = [&](const char* name, const char* help, const auto& value) {
    out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " gauge\n" << name << ' ' << value.load() << '\n';
  };
  counter("gateway_http_requests_total", "HTTP requests received.", http_requests);
  counter("gateway_http_responses_4xx_total", "Responses with a 4xx status.", http_responses_4xx);
  counter("gateway_http_responses_5xx_total", "Responses with a 5xx status.", http_responses_5xx);
  gauge("gateway_http_connections_open", "Open client connections.", http_connections_open);
  counter("gateway_runs_started_total", "Agent runs started.", runs_started);
  counter("gateway_runs_completed_total", "Agent runs that completed.", runs_completed);
  counter("gateway_runs_aborted_total", "Agent runs aborted.", runs_aborted);
  counter("gateway_runs_failed_total", "Agent runs that ended in an error.", runs_failed);
  gauge("gateway_runs_live", "Agent runs in progress.", runs_live);
  counter("gateway_events_published_total", "Events committed to the log and released to subscribers.", events_published);
  counter("gateway_event_batches_committed_total", "Event log batches committed.", event_batches_committed);
  gauge("gateway_sse_streams_open", "Open SSE streams.", sse_streams_open);
  counter("gateway_sse_frames_written_total", "SSE frames written to clients.", sse_frames_written);
  counter("gateway_sse_slow_subscribers_dropped_total",
          "SSE subscribers disconnected because a write made no progress for the write timeout.", sse_slow_subscribers_dropped);
  counter("gateway_sse_subscribers_behind_total",
          "Times a subscriber fell behind the live events and caught up from memory or the log.", sse_subscribers_behind);
  counter("gateway_store_rejected_total", "Storage jobs refused because the queue was full.", store_rejected);
  counter("gateway_webhooks_delivered_total", "Completion callbacks answered with a 2xx.", webhooks_delivered);
  counter("gateway_webhooks_failed_total", "Completion callbacks given up on (non-retryable answer or schedule exhausted).",
          webhooks_failed);
  counter("gateway_webhooks_retried_total", "Callback attempts that failed and were scheduled again.", webhooks_retried);
  return out.str();
}

}  // namespace agw::core
