#pragma once
// TEST ONLY (GATEWAY_TEST_CLOCK_OFFSET_FILE): a clock that is `base` plus a number of
// milliseconds read from a file at every wall_now(), so an integration test moves the
// TTL sweep's "now" forward by writing the file instead of waiting. Only the sweep
// reads it (a few calls per interval): the file read is no cost elsewhere because
// nothing else uses this clock. A missing or unreadable file is an offset of 0.
// Thread-safe as `base` is; holds no state of its own.
#include <string>

#include "core/clock.hpp"

namespace agw::core {

class file_offset_clock final : public clock {
 public:
  file_offset_clock(const clock& base, std::string path) : base_(base), path_(std::move(path)) {}
  wall_time wall_now() const override;
  steady_time steady_now() const override { return base_.steady_now(); }
  std::unique_ptr<wait_timer> make_timer(boost::asio::any_io_executor executor) const override {
    return base_.make_timer(std::move(executor));
  }

 private:
  const clock& base_;
  std::string path_;
};

}  // namespace agw::core
