#pragma once
// Per-client request rate (GATEWAY_RATE_LIMIT requests/s, bursts of
// GATEWAY_RATE_BURST): one token bucket per client key (the Authorization header's
// value when there is one, else the peer address). The table is bounded: at
// `max_clients` keys the least recently seen bucket is dropped (policy: evict LRU;
// a dropped client only gets a fresh burst, no other client's budget changes).
// Thread-safe: one mutex around a map lookup and a list splice per request.
#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

namespace agw::gateway {

class rate_limiter {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  static constexpr std::size_t default_max_clients = 65536;

  // rate 0: every request is allowed and nothing is stored.
  rate_limiter(double per_second, double burst, std::size_t max_clients = default_max_clients);

  // 0 when `key` may make a request now (a token is taken), else the whole seconds
  // until it may (for Retry-After, at least 1).
  long admit(const std::string& key, time_point now);

  std::size_t clients() const;

 private:
  struct bucket {
    double tokens;
    time_point refilled;
    std::list<std::string>::iterator lru;  // its key's place in recent_
  };
  bucket& find_or_add(const std::string& key, time_point now);

  const double per_second_;
  const double burst_;
  const std::size_t max_clients_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, bucket> buckets_;
  std::list<std::string> recent_;  // most recently seen first
};

}  // namespace agw::gateway
