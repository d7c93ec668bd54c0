#pragma once
// Everything request handlers share. Built once by the server before it
// accepts; members are thread-safe or immutable, so every strand may use them.
#include <atomic>

#include "core/metrics.hpp"
#include "core/settings.hpp"
#include "core/store_executor.hpp"
#include "gateway/router.hpp"

namespace agw::core {
class session_hub;
}

namespace agw::gateway {

class webhook_dispatcher;

struct app_context {
  const core::settings& config;
  core::store_executor& store;
  core::metrics& stats;
  core::session_hub& hub;
  router routes;
  std::atomic<bool> draining{false};
  webhook_dispatcher* webhooks = nullptr;  // set by the server; delivers the callback outbox
};

// Registers every API route on app.routes.
void register_routes(app_context& app);

}  // namespace agw::gateway
