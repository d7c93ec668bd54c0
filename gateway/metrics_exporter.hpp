#pragma once
// GET /metrics: the Prometheus text exposition of core::metrics, the router's
// per-route request counts, the store's queue and commits, and the process's
// CPU, memory and file descriptors. Built at scrape time with prometheus-cpp
// (a Registry for the process gauges, MetricFamily for core's snapshots, its
// TextSerializer for the text): core stays lock-free and Prometheus-free, and
// nothing is kept between scrapes. Any thread; reads only atomics and /proc.
#include <string>

namespace agw::gateway {

struct app_context;

std::string render_metrics(const app_context& app);

}  // namespace agw::gateway
