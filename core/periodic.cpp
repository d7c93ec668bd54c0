#include "core/periodic.hpp"

#include <spdlog/spdlog.h>

#include "core/clock.hpp"

namespace agw::core {

boost::asio::awaitable<void> repeat_every(const clock& time, std::chrono::milliseconds interval, const std::atomic<bool>& stopped,
                                          std::function<boost::asio::awaitable<void>()> pass, std::string what) {
  while (!stopped) {
    auto pausing = time.sleep_for(interval);
    co_await std::move(pausing);
    if (stopped) break;
    try {
      auto passing = pass();
      co_await std::move(passing);
    } catch (const std::exception& e) {
      spdlog::warn("{} failed: {}; trying again in {} ms", what, e.what(), interval.count());
    }
  }
}

}  // namespace agw::core
