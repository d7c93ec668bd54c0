#include "tests/bench/scenario.hpp"

#include <stdexcept>

namespace agw::bench {

// An explicit table rather than self-registering statics: the order is the
// --help order, and nothing depends on static initialisation order.
static const scenario registry[] = {
    {"sessions", "POST /sessions and GET /sessions/{id} over C keep-alive connections", run_sessions_scenario, "", nullptr},
    {"streams", "C concurrent runs (POST /sessions/{id}/messages) read as SSE to their done", run_streams_scenario, "100,1000",
     describe_streams_scenario},
};

std::span<const scenario> scenarios() { return registry; }

const scenario* find_scenario(std::string_view name) {
  for (const auto& s : registry)
    if (s.name == name) return &s;
  return nullptr;
}

void bench_target::check_alive() const {
  if (server && !server->running())
    throw std::runtime_error("the server exited during the benchmark; its log:\n" + server->stderr_text());
}

}  // namespace agw::bench
