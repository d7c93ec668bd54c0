#pragma once
// What a tenant-scoped API key changes in the session handlers: a session it
// creates carries scopes.tenant = its tenant, and its lists show only those.
// (Single-session routes are checked earlier, by the request guard.)
#include <boost/json/value.hpp>
#include <string>

#include "core/session_request.hpp"

namespace agw::gateway::auth {

// Sets scopes.tenant on a POST /sessions body; a body naming another tenant is a
// 400 (api_error). A body that is not an object is left for the service to refuse.
void stamp_tenant(boost::json::value& body, const std::string& tenant);

// Narrows a session list to the tenant's sessions (ANDed with the client's filters).
void restrict_to_tenant(core::session_filter& filter, const std::string& tenant);

}  // namespace agw::gateway::auth
