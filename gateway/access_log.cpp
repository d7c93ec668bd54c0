#include "gateway/access_log.hpp"

#include <spdlog/spdlog.h>

#include <string>

namespace agw::gateway {
namespace {

// The longest path logged: a client cannot make one line arbitrarily long.
constexpr std::size_t max_logged_path = 256;

// The target up to its query, cut to max_logged_path, with every byte outside printable
// ASCII as '?': a path is the client's text, and a log line must stay one valid line.
std::string path_of(std::string_view target) {
  auto path = target.substr(0, target.find('?'));
  std::string out(path.substr(0, std::min(path.size(), max_logged_path)));
  for (auto& c : out)
    if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return out;
}

}  // namespace

void log_access(bool enabled, const access_entry& e) {
  if (!enabled || !spdlog::should_log(spdlog::level::info)) return;
  const double ms = std::chrono::duration<double, std::milli>(e.took).count();
  spdlog::info("access request_id={} peer={} method={} path={} status={} bytes={}{} ms={:.1f}", e.request_id,
               e.peer.empty() ? "-" : e.peer, e.method.empty() ? "-" : e.method, e.target.empty() ? "-" : path_of(e.target),
               e.status, e.bytes, e.stream ? " stream=1" : "", ms);
}

}  // namespace agw::gateway
