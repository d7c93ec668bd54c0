#pragma once

#include <chrono>
#include <functional>
#include <string_view>

#include <boost/json/object.hpp>

#include "core/tools/tool.hpp"

namespace agw::core {

// Tool "current_time": returns the current time as RFC 3339 with millisecond
// precision, e.g. "2026-03-21T12:34:56.123Z", optionally shifted to a fixed
// UTC offset given as {"utc_offset": "+02:00"} (also "Z", "-05:30").
// Thread-safety: invoke() is const and may be called concurrently provided the
// injected clock is itself thread-safe (system_clock::now is).
class current_time final : public tool {
 public:
  using clock_fn = std::function<std::chrono::system_clock::time_point()>;

  // An empty `now` falls back to std::chrono::system_clock::now.
  explicit current_time(clock_fn now = std::chrono::system_clock::now);

  std::string_view name() const override;
  std::string_view description() const override;
  boost::json::object parameters_schema() const override;
  tool_result invoke(const boost::json::object& args) const override;

 private:
  clock_fn now_;
};

}  // namespace agw::core
