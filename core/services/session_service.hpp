#pragma once
// The session use cases: create, list, get, patch, delete, and the session
// lookup every other service starts from. Owns the sessions' storage access
// (through the store_executor) and merges in what the hub knows live (the
// running run, the newest event id).
//
// Executor: every method is an awaitable that runs on the caller's executor
// (a connection's strand); store jobs complete back onto it. The service holds
// no mutable state, so any number of strands may use it at once. Times come
// from the injected clock.
#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/session.hpp"
#include "core/session_request.hpp"

namespace agw::core {

class clock;
class session_hub;
class store_executor;

// A session as the API shows it: the stored row with the live state merged in.
struct session_view {
  session_record session;          // last_event_id: the newer of the stored and the live one
  std::optional<run_summary> run;  // the live run, if any
};

struct session_list {
  std::vector<session_view> sessions;  // newest first
  std::int64_t total = 0;              // matching sessions, all pages
};

class session_service {
 public:
  session_service(store_executor& store, session_hub& hub, const clock& time);

  // GATEWAY_SESSION_TTL in ms (0: sessions without their own ttl_seconds never expire);
  // shown as expires_at. Set before serving.
  void set_default_ttl_ms(std::int64_t ms) { default_ttl_ms_ = ms; }
  std::int64_t default_ttl_ms() const { return default_ttl_ms_; }

  // Throws api_error(not_found) for an id that cannot name a session (not a UUID):
  // such ids never reach storage, and callers may check before parsing a body.
  static void check_id(const std::string& id);

  // POST /sessions: the body's fields validated (api_error(bad_request)), ids and times assigned.
  boost::asio::awaitable<session_view> create(boost::json::value body);
  // The session `id` (a UUID: check_id), created from `body` as create() does when it does
  // not exist yet (POST /ag-ui names sessions by the client's threadId).
  boost::asio::awaitable<session_record> find_or_create(std::string id, boost::json::value body);
  boost::asio::awaitable<session_list> list(session_filter filter);
  // api_error(not_found) when there is no such session, here and below.
  boost::asio::awaitable<session_view> get(std::string id);
  // Validates the body, then applies it to the current row inside the write job.
  boost::asio::awaitable<session_view> patch(std::string id, boost::json::value body);
  // Deletes the rows, then aborts the live run and closes the session's subscribers.
  boost::asio::awaitable<void> remove(std::string id);

  // The stored row alone (no live state): what the other services start from.
  boost::asio::awaitable<session_record> require(std::string id);

 private:
  session_view with_live_state(session_record s) const;
  // A new session's defaults: its profile's labels, its activity time.
  void prepare_new(session_record& s) const;

  store_executor& store_;
  session_hub& hub_;
  const clock& clock_;
  std::int64_t default_ttl_ms_ = 0;
};

// When `s` expires with `default_ttl_ms` for sessions without their own TTL; nullopt: never.
std::optional<std::int64_t> expiry_of(const session_record& s, std::int64_t default_ttl_ms);

}  // namespace agw::core
