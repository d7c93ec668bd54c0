#include "core/histogram.hpp"

#include <stdexcept>

namespace agw::core {

histogram::histogram(std::initializer_list<double> upper_bounds) {
  if (upper_bounds.size() > max_buckets) throw std::invalid_argument("histogram: too many buckets");
  for (double b : upper_bounds) {
    if (size_ && b <= bounds_[size_ - 1]) throw std::invalid_argument("histogram: bounds must ascend");
    bounds_[size_++] = b;
  }
}

void histogram::observe(double value) noexcept {
  std::size_t i = 0;
  while (i < size_ && value > bounds_[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

histogram::snapshot histogram::read() const {
  snapshot out;
  out.upper_bounds.assign(bounds_.begin(), bounds_.begin() + static_cast<std::ptrdiff_t>(size_));
  std::uint64_t running = 0;
  for (std::size_t i = 0; i <= size_; ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    out.cumulative_counts.push_back(running);
  }
  out.count = running;
  out.sum = sum_.load(std::memory_order_relaxed);
  return out;
}

}  // namespace agw::core
