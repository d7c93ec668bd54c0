#pragma once
// A fixed-bucket histogram any thread may observe into without a lock or an
// allocation: relaxed atomic bucket counts and sum. read() takes a snapshot that
// may be a few observations stale, and may mix two concurrent observations
// (the Prometheus text format tolerates that; the counts never go down).
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace agw::core {

class histogram {
 public:
  static constexpr std::size_t max_buckets = 16;

  // Upper bounds, ascending; at most max_buckets (an implicit +Inf bucket follows).
  histogram(std::initializer_list<double> upper_bounds);

  void observe(double value) noexcept;

  struct snapshot {
    std::vector<double> upper_bounds;
    std::vector<std::uint64_t> cumulative_counts;  // one per bound, then the +Inf count
    double sum = 0;
    std::uint64_t count = 0;
  };
  snapshot read() const;

 private:
  std::array<double, max_buckets> bounds_{};
  std::size_t size_ = 0;
  std::array<std::atomic<std::uint64_t>, max_buckets + 1> counts_{};
  std::atomic<double> sum_{0};
};

}  // namespace agw::core
