#pragma once
// Port: a session's durable event log, read and written synchronously on a store
// connection's thread (replays, the long poll, start-up repair). The live
// pipeline appends through event_log_writer instead, which decides how a store
// lays events out. Throws store_error.
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/events/event_frame.hpp"
#include "core/store_records.hpp"

namespace agw::core {

class event_log {
 public:
  virtual ~event_log() = default;
  // Stores consecutive events of one session. Appending again from the same first id
  // (a retry) changes nothing, or extends what that first attempt stored.
  virtual void append_events(const event_batch_record& batch) = 0;
  // Every durable event with id > after_id, in order, at most `limit`.
  virtual std::vector<frame_ptr> events_after(std::string_view session_id, std::int64_t after_id, std::size_t limit) = 0;
  virtual std::int64_t oldest_event_id(std::string_view session_id) = 0;  // 0: none held
  // Retention: drops the session's events below `keep_from_id`, exactly.
  virtual void trim_events(std::string_view session_id, std::int64_t keep_from_id) = 0;
};

}  // namespace agw::core
