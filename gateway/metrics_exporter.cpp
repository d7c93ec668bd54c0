#include "gateway/metrics_exporter.hpp"

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <limits>

#include "core/services/health_service.hpp"
#include "gateway/app_context.hpp"
#include "gateway/process_metrics.hpp"

namespace agw::gateway {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily family(std::string name, std::string help, MetricType type) {
  return MetricFamily{std::move(name), std::move(help), type, {}};
}

ClientMetric labelled(std::vector<ClientMetric::Label> labels) {
  ClientMetric m;
  m.label = std::move(labels);
  return m;
}

template <class Atomic>
MetricFamily single(std::string name, std::string help, MetricType type, const Atomic& value) {
  auto f = family(std::move(name), std::move(help), type);
  ClientMetric m;
  const auto v = static_cast<double>(value.load(std::memory_order_relaxed));
  if (type == MetricType::Counter)
    m.counter.value = v;
  else
    m.gauge.value = v;
  f.metric.push_back(std::move(m));
  return f;
}

ClientMetric histogram_metric(const core::histogram& h, std::vector<ClientMetric::Label> labels = {}) {
  const auto snap = h.read();
  ClientMetric m = labelled(std::move(labels));
  m.histogram.sample_count = snap.count;
  m.histogram.sample_sum = snap.sum;
  for (std::size_t i = 0; i < snap.upper_bounds.size(); ++i)
    m.histogram.bucket.push_back({snap.cumulative_counts[i], snap.upper_bounds[i]});
  m.histogram.bucket.push_back({snap.cumulative_counts.back(), std::numeric_limits<double>::infinity()});
  return m;
}

MetricFamily histogram_family(std::string name, std::string help, const core::histogram& h) {
  auto f = family(std::move(name), std::move(help), MetricType::Histogram);
  f.metric.push_back(histogram_metric(h));
  return f;
}

ClientMetric counter_with(std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric m = labelled(std::move(labels));
  m.counter.value = value;
  return m;
}

MetricFamily request_family(const app_context& app) {
  auto f = family("gateway_http_requests_by_route_total", "Requests answered by the router, by method, route pattern and status.",
                  MetricType::Counter);
  const auto& names = app.routes.route_names();
  const auto& table = app.stats.requests.counts;
  for (std::size_t r = 0; r < table.size(); ++r) {
    const bool unmatched = r == core::request_counts::unmatched || r >= names.size();
    for (std::size_t s = 0; s < table[r].size(); ++s) {
      const auto n = table[r][s].load(std::memory_order_relaxed);
      if (n == 0 || (unmatched && r != core::request_counts::unmatched)) continue;
      const std::string status =
          s == core::request_counts::other_status ? "other" : std::to_string(core::request_counts::statuses[s]);
      const std::string method = unmatched ? "any" : names[r].method;
      const std::string route = unmatched ? "unmatched" : names[r].pattern;
      f.metric.push_back(counter_with({{"method", method}, {"route", route}, {"status", status}}, static_cast<double>(n)));
    }
  }
  return f;
}

MetricFamily events_family(const core::metrics& stats) {
  auto f = family("gateway_events_by_type_total", "Events committed and released to subscribers, by type.", MetricType::Counter);
  for (std::size_t t = 0; t < core::event_type_count; ++t) {
    const auto type = static_cast<core::event_type>(t);
    if (type == core::event_type::reconnected) continue;  // never stored
    f.metric.push_back(counter_with({{"type", std::string(core::name_of(type))}},
                                    static_cast<double>(stats.events_by_type[t].load(std::memory_order_relaxed))));
  }
  return f;
}

// The families kept from before labels existed, under their old names (dashboards use them).
void add_plain_families(const core::metrics& s, std::vector<MetricFamily>& out) {
  using T = MetricType;
  out.push_back(single("gateway_http_requests_total", "HTTP requests received.", T::Counter, s.http_requests));
  out.push_back(single("gateway_http_responses_4xx_total", "Responses with a 4xx status.", T::Counter, s.http_responses_4xx));
  out.push_back(single("gateway_http_responses_5xx_total", "Responses with a 5xx status.", T::Counter, s.http_responses_5xx));
  out.push_back(single("gateway_http_connections_open", "Open client connections.", T::Gauge, s.http_connections_open));
  out.push_back(single("gateway_runs_started_total", "Agent runs started.", T::Counter, s.runs_started));
  out.push_back(single("gateway_runs_completed_total", "Agent runs that completed.", T::Counter, s.runs_completed));
  out.push_back(single("gateway_runs_aborted_total", "Agent runs aborted.", T::Counter, s.runs_aborted));
  out.push_back(single("gateway_runs_failed_total", "Agent runs that ended in an error.", T::Counter, s.runs_failed));
  out.push_back(single("gateway_runs_live", "Agent runs in progress.", T::Gauge, s.runs_live));
  out.push_back(single("gateway_events_published_total", "Events committed and released.", T::Counter, s.events_published));
  out.push_back(single("gateway_runs_fenced_out_total", "Runs stopped because another node took their lease.", T::Counter,
                       s.runs_fenced_out));
  out.push_back(single("gateway_runs_taken_over_total", "Runs of a node whose lease lapsed, closed here as interrupted.",
                       T::Counter, s.runs_taken_over));
  out.push_back(single("gateway_events_followed_total", "Events another node committed, taken on by this node's channels.",
                       T::Counter, s.events_followed));
  out.push_back(single("gateway_fanout_published_total", "Committed batches published to the other nodes (Redis).", T::Counter,
                       s.fanout_published));
  out.push_back(
      single("gateway_fanout_received_total", "Other nodes' committed batches heard (Redis).", T::Counter, s.fanout_received));
  out.push_back(single("gateway_fanout_dropped_total",
                       "Batches not published (queue full or Redis unreachable); followers read them from the log.", T::Counter,
                       s.fanout_dropped));
  out.push_back(
      single("gateway_fanout_connected", "1 while the Redis subscriber connection is up.", T::Gauge, s.fanout_connected));
  out.push_back(
      single("gateway_fanout_reconnects_total", "Redis connections made again after a loss.", T::Counter, s.fanout_reconnects));
  out.push_back(single("gateway_fanout_log_polls_total", "Log reads by channels following another node's run.", T::Counter,
                       s.fanout_log_polls));
  out.push_back(
      single("gateway_event_batches_committed_total", "Event log batches committed.", T::Counter, s.event_batches_committed));
  out.push_back(single("gateway_sse_streams_open", "Open SSE streams.", T::Gauge, s.sse_streams_open));
  out.push_back(single("gateway_session_channels", "Sessions whose live channel is in memory.", T::Gauge, s.channels_open));
  out.push_back(single("gateway_session_channels_evicted_total", "Session channels dropped from memory because they were idle.",
                       T::Counter, s.channels_evicted));
  out.push_back(single("gateway_sse_frames_written_total", "SSE frames written to clients.", T::Counter, s.sse_frames_written));
  out.push_back(single("gateway_sse_slow_subscribers_dropped_total",
                       "SSE subscribers disconnected because a write made no progress for the write timeout.", T::Counter,
                       s.sse_slow_subscribers_dropped));
  out.push_back(single("gateway_sse_subscribers_behind_total",
                       "Times a live SSE subscriber fell behind its bound and went to catching up.", T::Counter,
                       s.sse_subscribers_behind));
  out.push_back(
      single("gateway_webhooks_delivered_total", "Webhook deliveries that got a 2xx.", T::Counter, s.webhooks_delivered));
  out.push_back(single("gateway_webhooks_failed_total", "Webhook deliveries given up (attempts exhausted).", T::Counter,
                       s.webhooks_failed));
  out.push_back(single("gateway_webhooks_retried_total", "Webhook attempts that failed and were rescheduled.", T::Counter,
                       s.webhooks_retried));
}

void add_labelled_families(const app_context& app, std::vector<MetricFamily>& out) {
  const auto& s = app.stats;
  out.push_back(request_family(app));
  out.push_back(histogram_family("gateway_http_request_duration_seconds",
                                 "Seconds from a routed request to its answer (a stream: to its head).", s.request_seconds));
  out.push_back(events_family(s));
  out.push_back(
      single("gateway_subscribers", "Subscribers of sessions' event sequences.", MetricType::Gauge, s.subscribers_open));
  out.push_back(single("gateway_subscribers_catching_up", "Subscribers replaying or lagging, served page by page.",
                       MetricType::Gauge, s.subscribers_catching_up));
  auto replays =
      family("gateway_replay_reads_total", "Replay and catch-up reads, by where they were served from.", MetricType::Counter);
  replays.metric.push_back(counter_with({{"source", "ring"}}, static_cast<double>(s.replay_reads_ring.load())));
  replays.metric.push_back(counter_with({{"source", "log"}}, static_cast<double>(s.replay_reads_log.load())));
  out.push_back(std::move(replays));
  auto webhooks = family("gateway_webhook_attempts_total", "Webhook delivery attempts, by outcome.", MetricType::Counter);
  webhooks.metric.push_back(counter_with({{"outcome", "delivered"}}, static_cast<double>(s.webhooks_delivered.load())));
  webhooks.metric.push_back(counter_with({{"outcome", "failed"}}, static_cast<double>(s.webhooks_failed.load())));
  webhooks.metric.push_back(counter_with({{"outcome", "retry"}}, static_cast<double>(s.webhooks_retried.load())));
  out.push_back(std::move(webhooks));
  out.push_back(histogram_family("gateway_webhook_attempt_duration_seconds", "Seconds one webhook attempt took.",
                                 s.webhook_attempt_seconds));
  out.push_back(histogram_family("gateway_upstream_time_to_first_token_seconds",
                                 "Seconds from an upstream model request to its first token.", s.upstream_first_token_seconds));
  out.push_back(histogram_family("gateway_upstream_tokens_per_second", "Output tokens per second of upstream model streams.",
                                 s.upstream_tokens_per_second));
}

void add_store_families(const app_context& app, std::vector<MetricFamily>& out) {
  auto depth = family("gateway_store_queue_depth", "Store jobs queued for the writer and readers.", MetricType::Gauge);
  ClientMetric m;
  m.gauge.value = static_cast<double>(app.health.queue_depth());
  depth.metric.push_back(std::move(m));
  out.push_back(std::move(depth));
  auto rejected = family("gateway_store_rejected_total", "Store jobs refused because a queue was full.", MetricType::Counter);
  ClientMetric r;
  r.counter.value = static_cast<double>(app.health.rejected_jobs());
  rejected.metric.push_back(std::move(r));
  out.push_back(std::move(rejected));
  out.push_back(histogram_family("gateway_store_commit_duration_seconds", "Seconds one write batch took to commit.",
                                 app.health.commit_latency()));
  out.push_back(histogram_family("gateway_event_commit_wait_seconds",
                                 "Seconds from an event batch's oldest event being published to its release to subscribers "
                                 "(the longest any of its events waited to be durable).",
                                 app.stats.event_commit_wait_seconds));
}

}  // namespace

std::string render_metrics(const app_context& app) {
  std::vector<MetricFamily> families;
  add_plain_families(app.stats, families);
  add_labelled_families(app, families);
  add_store_families(app, families);
  add_process_families(families);
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace agw::gateway
