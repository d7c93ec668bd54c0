#pragma once
// An app_context over the core services on the in-memory fake store (the core
// suite's services_fixture), for tests of the gateway's request path: the router
// and connections never touch the services themselves, but app_context names them.
// Single-threaded: the test drives `core.io` (await(), settle()); the store
// executor's threads are the fixture's own.
#include "core/services/health_service.hpp"
#include "gateway/app_context.hpp"
#include "tests/core/services/services_fixture.hpp"

namespace agw::test {

struct app_fixture {
  services_fixture core;
  core::health_service health{core.store};
  gateway::app_context app{core.config,   core.stats,  core.sessions,   core.runs,
                           core.messages, core.events, core.deliveries, health};
};

}  // namespace agw::test
