#pragma once
// What the operations endpoints ask of storage: whether the writer can still
// commit (readiness) and how many store jobs were refused for a full queue.
//
// Executor: check_writable() is an awaitable on the caller's executor;
// rejected_jobs() is thread-safe.
#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>

#include "core/histogram.hpp"

namespace agw::core {

class store_executor;

class health_service {
 public:
  explicit health_service(store_executor& store);

  // Completes when an empty write batch commits: the writer thread is alive and can
  // take the write lock. Throws store_error (store_busy) otherwise.
  boost::asio::awaitable<void> check_writable();
  std::uint64_t rejected_jobs() const;
  // For /metrics: jobs queued for the store, and its write batches' commit times.
  std::size_t queue_depth() const;
  const histogram& commit_latency() const;

 private:
  store_executor& store_;
};

}  // namespace agw::core
