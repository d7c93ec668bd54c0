#pragma once
// CORS for browser front ends on other origins (GATEWAY_CORS_ORIGINS): preflights
// answered, and the CORS headers added to answers for an allowed origin. Nothing
// is added without the setting, or for an origin not in it (the browser then
// refuses the answer itself). No Access-Control-Allow-Credentials, ever: callers
// authenticate with a bearer key, not cookies, which is also what makes "*" safe.
// Pure functions of the settings and the request: any thread.
#include <optional>

#include "core/settings.hpp"
#include "gateway/http_types.hpp"

namespace agw::gateway {

// OPTIONS with Origin and Access-Control-Request-Method from an allowed origin: 204
// with the Access-Control-Allow-* headers. nullopt for anything else (not a
// preflight, CORS off, or a refused origin: the path's ordinary OPTIONS answer).
std::optional<response> answer_cors_preflight(const core::settings& config, const request& req);

// An allowed Origin's Access-Control-Allow-Origin, Expose-Headers and Vary.
void add_cors_headers(const core::settings& config, const request& req, http::fields& headers);

}  // namespace agw::gateway
