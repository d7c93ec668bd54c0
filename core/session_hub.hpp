#pragma once
// The live side of sessions: which run is live on which session and the
// newest event id handed out. (Grows into the run/event pipeline.)
// Thread-safe: a mutex guards the map; nothing is called out under it.
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/session.hpp"

namespace agw::core {

class session_hub {
 public:
  struct live_view {
    std::optional<run_summary> run;
    std::int64_t last_event_id = 0;
  };

  live_view live_state(const std::string& session_id) const;
  void session_deleted(const std::string& session_id);

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, live_view> live_;
};

}  // namespace agw::core
