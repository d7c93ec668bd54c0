// core/paced_worker: one job on a thread of its own, run when notified, paced under load.
#include "core/paced_worker.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using agw::core::paced_worker;
using clock_type = std::chrono::steady_clock;

bool eventually(const std::function<bool()>& ok) {
  const auto until = clock_type::now() + 5s;
  while (!ok() && clock_type::now() < until) std::this_thread::sleep_for(1ms);
  return ok();
}

}  // namespace

TEST_CASE("paced_worker: each notify is followed by a run; notifies during a run ask for one more, not one each") {
  std::mutex m;
  std::condition_variable cv;
  bool hold = true;
  std::atomic<int> runs{0};
  paced_worker w("test-worker", 0us, [&] {
    ++runs;
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return !hold; });
  });
  std::this_thread::sleep_for(20ms);
  CHECK(runs == 0);  // nothing notified: nothing runs
  w.notify();
  REQUIRE(eventually([&] { return runs == 1; }));
  for (int i = 0; i < 10; ++i) w.notify();  // while the first run is held
  {
    std::lock_guard lock(m);
    hold = false;
  }
  cv.notify_all();
  REQUIRE(eventually([&] { return runs == 2; }));
  std::this_thread::sleep_for(20ms);
  CHECK(runs == 2);
}

TEST_CASE("paced_worker: under a steady stream of notifies, runs are at least the interval apart") {
  std::mutex m;
  std::vector<clock_type::time_point> starts;
  paced_worker w("test-worker", 5ms, [&] {
    std::lock_guard lock(m);
    starts.push_back(clock_type::now());
  });
  const auto until = clock_type::now() + 200ms;
  while (clock_type::now() < until) {
    w.notify();
    std::this_thread::sleep_for(200us);
  }
  w.stop();
  REQUIRE(starts.size() >= 5);
  CHECK(starts.size() <= 45);  // ~1,000 notifies, one run per 5 ms at most
  for (std::size_t i = 1; i < starts.size(); ++i) CHECK(starts[i] - starts[i - 1] >= 5ms);
}

TEST_CASE("paced_worker: an idle worker runs a notify at once") {
  std::atomic<int> runs{0};
  paced_worker w("test-worker", 200ms, [&] { ++runs; });
  std::this_thread::sleep_for(250ms);  // longer than the interval: no pause is owed
  const auto at = clock_type::now();
  w.notify();
  REQUIRE(eventually([&] { return runs == 1; }));
  CHECK(clock_type::now() - at < 150ms);
}

TEST_CASE("paced_worker: stop runs what was notified, then nothing more") {
  std::atomic<int> runs{0};
  {
    paced_worker w("test-worker", 200ms, [&] { ++runs; });
    w.notify();
    REQUIRE(eventually([&] { return runs == 1; }));
    w.notify();  // due only 200 ms after the first run
    w.stop();
    CHECK(runs == 2);
    w.notify();
    std::this_thread::sleep_for(10ms);
    CHECK(runs == 2);
  }
  std::atomic<int> idle_runs{0};
  {
    paced_worker idle("test-worker", 0us, [&] { ++idle_runs; });
  }
  CHECK(idle_runs == 0);
}
