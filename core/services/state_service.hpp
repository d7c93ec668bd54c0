#pragma once
// GET/PATCH /sessions/{id}/state: the merged view of a session's four state scopes
// (core/session_state.hpp) and their atomic update. The persisted scopes go through
// the store (one write job: every key of a PATCH commits or none does); temp: keys
// live here, in memory, tagged with the run that was live when they were written,
// and vanish once that run is no longer the session's live run (checked on every
// access: no hook into the run's end is needed, and a restart forgets them).
//
// Executor: awaitables on the caller's executor. The temp map is guarded by a mutex
// held only for map operations (never across an await); it is bounded
// (max_temp_sessions): a PATCH that would grow it past that is refused with 503.
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <map>
#include <mutex>
#include <string>

namespace agw::core {

class clock;
class session_hub;
class session_service;
class store_executor;

class state_service {
 public:
  static constexpr std::size_t max_temp_sessions = 10000;

  state_service(store_executor& store, session_service& sessions, session_hub& hub, const clock& time);

  // {"state": {key: value}} with every scope merged (prefixes kept). api_error(not_found).
  boost::asio::awaitable<boost::json::object> get(std::string id);
  // Applies {key: value|null} atomically; returns the merged view after it.
  // api_error(bad_request) for any bad key (nothing applied), not_found, unavailable.
  boost::asio::awaitable<boost::json::object> patch(std::string id, boost::json::value body);

 private:
  struct temp_entry {
    std::string run_id;
    boost::json::object values;  // name -> value
  };
  // The session's temp values while their run is still live; erased otherwise.
  boost::json::object live_temp(const std::string& session_id);

  store_executor& store_;
  session_service& sessions_;
  session_hub& hub_;
  const clock& clock_;
  std::mutex mutex_;
  std::map<std::string, temp_entry> temp_;  // by session id
};

}  // namespace agw::core
