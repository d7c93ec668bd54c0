#include "core/session_hub.hpp"

namespace agw::core {

session_hub::live_view session_hub::live_state(const std::string& session_id) const {
  std::lock_guard lock(mutex_);
  auto it = live_.find(session_id);
  return it == live_.end() ? live_view{} : it->second;
}

void session_hub::session_deleted(const std::string& session_id) {
  std::lock_guard lock(mutex_);
  live_.erase(session_id);
}

}  // namespace agw::core
