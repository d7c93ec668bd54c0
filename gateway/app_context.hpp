#pragma once
// Everything request handlers share. Built once by the server before it
// accepts; members are thread-safe or immutable, so every strand may use them.
// Handlers reach storage and the sessions' live state only through the core
// services (core/services/): the use cases live there, the handlers translate HTTP.
#include <atomic>

#include "core/metrics.hpp"
#include "core/settings.hpp"
#include "gateway/auth/access_control.hpp"
#include "gateway/router.hpp"

namespace agw::core {
class event_service;
class health_service;
class message_service;
class run_service;
class session_service;
class state_service;
class timeline_service;
class webhook_service;
}  // namespace agw::core

namespace agw::gateway {

class rate_limiter;
class webhook_dispatcher;

struct app_context {
  const core::settings& config;
  core::metrics& stats;
  core::session_service& sessions;
  core::run_service& runs;
  core::message_service& messages;
  core::event_service& events;
  core::webhook_service& deliveries;  // the webhook outbox's records
  core::health_service& health;
  router routes{};
  std::atomic<bool> draining{false};
  webhook_dispatcher* webhooks = nullptr;      // set by the server; delivers the callback outbox
  rate_limiter* rate = nullptr;                // set by the server when GATEWAY_RATE_LIMIT is on
  auth::access_control access{config};         // API keys, the metrics key, stream tokens
  core::timeline_service* timeline = nullptr;  // set by the server: custom events, operator messages
  core::state_service* state = nullptr;        // set by the server: GET/PATCH /sessions/{id}/state
};

// Registers every API route on app.routes.
void register_routes(app_context& app);

}  // namespace agw::gateway
