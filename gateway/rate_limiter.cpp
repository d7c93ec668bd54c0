#include "gateway/rate_limiter.hpp"

#include <algorithm>
#include <cmath>

namespace agw::gateway {

rate_limiter::rate_limiter(double per_second, double burst, std::size_t max_clients)
    : per_second_(per_second), burst_(std::max(1.0, burst)), max_clients_(std::max<std::size_t>(1, max_clients)) {}

rate_limiter::bucket& rate_limiter::find_or_add(const std::string& key, time_point now) {
  if (auto it = buckets_.find(key); it != buckets_.end()) {
    recent_.splice(recent_.begin(), recent_, it->second.lru);
    return it->second;
  }
  if (buckets_.size() >= max_clients_) {
    buckets_.erase(recent_.back());
    recent_.pop_back();
  }
  recent_.push_front(key);
  return buckets_.emplace(key, bucket{burst_, now, recent_.begin()}).first->second;
}

long rate_limiter::admit(const std::string& key, time_point now) {
  if (per_second_ <= 0) return 0;
  std::lock_guard lock(mutex_);
  bucket& b = find_or_add(key, now);
  const double elapsed = std::chrono::duration<double>(now - b.refilled).count();
  if (elapsed > 0) {
    b.tokens = std::min(burst_, b.tokens + elapsed * per_second_);
    b.refilled = now;
  }
  if (b.tokens >= 1.0) {
    b.tokens -= 1.0;
    return 0;
  }
  return std::max(1L, static_cast<long>(std::ceil((1.0 - b.tokens) / per_second_)));
}

std::size_t rate_limiter::clients() const {
  std::lock_guard lock(mutex_);
  return buckets_.size();
}

}  // namespace agw::gateway
