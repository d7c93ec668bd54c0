#pragma once
// Port: the sessions themselves (their rows, metadata and scopes labels).
// Implemented by every store (persistence/); used on a store connection's thread
// only (store_connection.hpp). Methods throw store_error on failure.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/session.hpp"
#include "core/session_request.hpp"

namespace agw::core {

// Where a session's event webhook stands: every event up to forwarded_id is in the outbox.
struct event_webhook_cursor {
  std::string session_id;
  std::string url;
  std::int64_t forwarded_id = 0;
};

class session_catalog {
 public:
  virtual ~session_catalog() = default;
  virtual void insert_session(const session_record& s) = 0;
  virtual std::optional<session_record> find_session(std::string_view id) = 0;
  virtual session_page list_sessions(const session_filter& filter) = 0;
  virtual bool update_session(const session_record& s) = 0;  // false: no such session
  virtual bool delete_session(std::string_view id) = 0;      // with everything it owns
  virtual std::vector<std::string> all_session_ids() = 0;
  // Up to `limit` sessions idle past their TTL at `now_ms`, the longest idle first: a
  // session's own ttl_seconds (0: never), else `default_ttl_ms` (0: never).
  virtual std::vector<session_record> idle_sessions(std::int64_t now_ms, std::int64_t default_ttl_ms, std::size_t limit) = 0;
  // Sessions with an event_webhook_url, by id after `after_id` ("" from the start), at most `limit`.
  virtual std::vector<event_webhook_cursor> event_webhook_cursors(std::string_view after_id, std::size_t limit) = 0;
  // One session's; nullopt when it is gone or has no event_webhook_url.
  virtual std::optional<event_webhook_cursor> find_event_webhook_cursor(std::string_view session_id) = 0;
  // Moves the cursor (never backwards); false when the session is gone.
  virtual bool advance_event_webhook_cursor(std::string_view session_id, std::int64_t forwarded_id) = 0;
};

}  // namespace agw::core
