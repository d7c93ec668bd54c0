#pragma once
// Per-request latencies kept exactly (not bucketed): a 5 s run at tens of
// thousands of requests/s is only a few MB, and exact samples make p99 honest.
// Not thread-safe: each connection records into its own recorder and the
// driver merges them after the run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

namespace agw::bench {

class latency_recorder {
 public:
  void reserve(std::size_t n) { samples_ns_.reserve(n); }
  void record(std::chrono::nanoseconds d) {
    samples_ns_.push_back(d.count());
    sorted_ = false;
  }
  void merge(const latency_recorder& other) {
    samples_ns_.insert(samples_ns_.end(), other.samples_ns_.begin(), other.samples_ns_.end());
    sorted_ = false;
  }
  std::size_t count() const { return samples_ns_.size(); }

  // Nearest-rank percentile (p in [0, 100]) in microseconds; 0 when empty.
  double percentile_us(double p) {
    if (samples_ns_.empty()) return 0.0;
    if (!sorted_) {
      std::sort(samples_ns_.begin(), samples_ns_.end());
      sorted_ = true;
    }
    auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(samples_ns_.size())));
    rank = std::clamp<std::size_t>(rank, 1, samples_ns_.size());
    return static_cast<double>(samples_ns_[rank - 1]) / 1000.0;
  }

 private:
  std::vector<std::int64_t> samples_ns_;
  bool sorted_ = true;
};

}  // namespace agw::bench
