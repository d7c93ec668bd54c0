// core::histogram: fixed buckets, cumulative snapshots, bad bounds refused.
#include <doctest/doctest.h>

#include <stdexcept>
#include <thread>
#include <vector>

#include "core/histogram.hpp"
#include "core/metrics.hpp"

using agw::core::histogram;

TEST_CASE("histogram: observations land in the first bucket whose bound they do not exceed") {
  histogram h{0.1, 1, 10};
  for (double v : {0.05, 0.1, 0.5, 1.0, 5.0, 50.0, 500.0}) h.observe(v);
  const auto s = h.read();
  CHECK(s.upper_bounds == std::vector<double>{0.1, 1, 10});
  CHECK(s.cumulative_counts == std::vector<std::uint64_t>{2, 4, 5, 7});
  CHECK(s.count == 7);
  CHECK(s.sum == doctest::Approx(556.65));
}

TEST_CASE("histogram: concurrent observers lose nothing") {
  histogram h{1, 2};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&h] {
      for (int i = 0; i < 10000; ++i) h.observe(i % 3);
    });
  for (auto& t : threads) t.join();
  const auto s = h.read();
  CHECK(s.count == 40000);
  CHECK(s.cumulative_counts.back() == 40000);
}

TEST_CASE("histogram: bounds must ascend and fit") {
  CHECK_THROWS_AS((histogram{1, 1}), std::invalid_argument);
  CHECK_THROWS_AS((histogram{2, 1}), std::invalid_argument);
  CHECK_THROWS_AS((histogram{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}), std::invalid_argument);
}

TEST_CASE("request counts: known statuses have their slot, others share one") {
  using agw::core::request_counts;
  CHECK(request_counts::statuses[request_counts::slot_of(404)] == 404);
  CHECK(request_counts::slot_of(299) == request_counts::other_status);
  request_counts counts;
  counts.count(3, 201);
  counts.count(1000, 404);  // out of range: the unmatched row
  CHECK(counts.counts[3][request_counts::slot_of(201)] == 1);
  CHECK(counts.counts[request_counts::unmatched][request_counts::slot_of(404)] == 1);
}
