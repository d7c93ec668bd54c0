#include "tests/bench/scenario.hpp"

#include <stdexcept>

namespace agw::bench {

// An explicit table rather than self-registering statics: the order is the
// --help order, and nothing depends on static initialisation order.
static const scenario registry[] = {
    {"sessions", "POST /sessions and GET /sessions/{id} over C keep-alive connections", run_sessions_scenario, "", nullptr},
    {"streams", "C concurrent runs (POST /sessions/{id}/messages) read as SSE to their done", run_streams_scenario, "100,1000",
     describe_streams_scenario},
    {"fanout", "one max-speed run of N tokens delivered to S subscribers of one session (GET /events)", run_fanout_scenario, "",
     describe_fanout_scenario, "GATEWAY_SSE_HEARTBEAT_INTERVAL=2", false},
    {"idle", "10,000 idle GET /events subscriptions: server KiB per connection, CPU of heartbeats", run_idle_scenario, "",
     describe_idle_scenario, "GATEWAY_SSE_HEARTBEAT_INTERVAL=1", false},
    {"resume", "GET /events with Last-Event-ID: latency to the first replayed frame, from the ring and from the log",
     run_resume_scenario, "", describe_resume_scenario, "GATEWAY_SSE_HEARTBEAT_INTERVAL=1", false},
    {"sustained", "the same few sessions run after run (1 to 1,000 runs each): events/s, CPU and bytes written per run, db size",
     run_sustained_scenario, "", describe_sustained_scenario, "", false, false},
    {"frontends", "CPU per event per stream for each encoding (contract SSE, AG-UI, UI message stream), 100 streams of one run",
     run_frontends_scenario, "", describe_frontends_scenario, "GATEWAY_SSE_HEARTBEAT_INTERVAL=2", false},
    {"upstream", "openai provider vs tests/fake_upstream at 50 tokens/s: added latency per token (p50/p99), CPU per token",
     run_upstream_scenario, "1,100,1000", describe_upstream_scenario, "", true, false},
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
