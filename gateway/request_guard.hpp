#pragma once
// The gate every routed request passes before its handler (router::dispatch):
// who is calling — an API key as `Authorization: Bearer`, the /metrics key, or
// a stream token as ?token= on GET /sessions/{id}/events only — and, for a
// tenant's key, whether the session the path names is that tenant's (another
// tenant's session is a 404, as if it did not exist). Open routes: /, /healthz,
// /readyz. Runs on the connection's strand; reads only immutable or atomic state.
#include <string>
#include <vector>

#include "gateway/router.hpp"

namespace agw::gateway {

// nullopt: go on to the handler (ctx.tenant set for a tenant's key); else the
// refusal to send (401 with WWW-Authenticate). A foreign session throws not_found.
awaitable<handler_result> guard_request(request_context& ctx, const std::vector<std::string>& segments);

}  // namespace agw::gateway
