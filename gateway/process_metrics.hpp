#pragma once
// The standard process_* families (CPU seconds, resident and virtual memory,
// open and maximum file descriptors, start time), read from /proc/self at
// scrape time into a prometheus-cpp Registry. Linux only, as the gateway is.
#include <prometheus/metric_family.h>

#include <vector>

namespace agw::gateway {

void add_process_families(std::vector<prometheus::MetricFamily>& out);

}  // namespace agw::gateway
