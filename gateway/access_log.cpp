#include "gateway/access_log.hpp"

#include <spdlog/spdlog.h>

#include <string>

namespace agw::gateway {
namespace {

// The longest path logged: a client cannot make one line arbitrarily long.
constexpr std::size_t max_logged_path = 256;

}  // namespace

std::string loggable_path(std::string_view target) {
  auto path = target.substr(0, target.find('?'));
  std::string out(path.substr(0, std::min(path.size(), max_logged_path)));
  for (auto& c : out)
    if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return out;
}

void log_access(bool enabled, const access_entry& e) {
  if (!enabled || !spdlog::should_log(spdlog::level::info)) return;
  const double ms = std::chrono::duration<double, std::milli>(e.took).count();
  spdlog::info("access request_id={} peer={} method={} path={} status={} bytes={}{} ms={:.1f}", e.request_id,
               e.peer.empty() ? "-" : e.peer, e.method.empty() ? "-" : e.method, e.target.empty() ? "-" : loggable_path(e.target),
               e.status, e.bytes, e.stream ? " stream=1" : "", ms);
}

}  // namespace agw::gateway
