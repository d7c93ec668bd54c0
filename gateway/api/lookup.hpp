#pragma once
// Lookups that several handlers share.
#include "core/session.hpp"
#include "gateway/http_types.hpp"

namespace agw::gateway {
struct app_context;
}

namespace agw::gateway::api {

// The stored session, or api_error(not_found) for a missing or malformed id.
awaitable<core::session_record> find_session_or_404(app_context& app, const std::string& id);
// The Session JSON with its live run (if any) and current last_event_id merged in.
boost::json::object session_json(app_context& app, const core::session_record& s);

}  // namespace agw::gateway::api
