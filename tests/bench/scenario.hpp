#pragma once
// Scenarios are plain functions listed in one registry (scenario.cpp), chosen
// with --scenario NAME. A new one (SSE streaming runs, fan-out to subscribers)
// is a new file with a run function plus one line in the registry; it reuses the
// server process, the load driver and the report.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tests/bench/report.hpp"
#include "tests/bench/server_process.hpp"

namespace agw::bench {

struct bench_options {
  std::string scenario = "sessions";
  std::vector<unsigned> connections{1, 64};
  bool connections_given = false;  // false: the scenario's default_connections apply
  double seconds = 5.0;            // per measurement
  std::uint64_t requests = 0;      // per measurement; 0: --seconds decides
  unsigned repeat = 3;
  double warmup_seconds = 0.5;  // per connection count, not reported
  unsigned client_threads = 1;
  std::chrono::milliseconds request_timeout{5000};
  std::optional<std::uint16_t> port;  // drive an already-running server
  std::string binary;
  server_process::env_map server_env;  // extra GATEWAY_* for a started server
  // streams: tokens per run, and the token rates to run (0 = as fast as possible).
  unsigned tokens = 200;
  bool tokens_given = false;  // false: fanout uses its own default (20000)
  std::vector<double> rates{0.0, 20.0};
  bool seconds_given = false;  // false: idle measures 10 s windows
  // fanout: subscriber counts (default 1,100,1000); idle: one count (default 10000).
  std::vector<unsigned> subscribers;
  // idle: sessions the subscriptions are spread over (default 100); sustained: sessions (default 4).
  unsigned sessions = 0;
  // resume: events in the resumed session (default 5000).
  unsigned session_events = 0;
  // sustained: runs per session (default 1000).
  unsigned runs = 0;
};

// What a scenario drives. server is null with --port: no CPU or RSS figures then.
struct bench_target {
  std::uint16_t port = 0;
  server_process* server = nullptr;
  const std::atomic<bool>* interrupted = nullptr;

  std::optional<double> server_cpu_seconds() const { return server ? server->cpu_seconds() : std::nullopt; }
  // Throws when a server the bench started has died: later figures would be noise.
  void check_alive() const;
};

struct scenario {
  std::string_view name;
  std::string_view summary;  // one line for --help
  void (*run)(const bench_options& options, bench_target& target, report& out);
  // Connection counts when --connections is not given ("" keeps bench_options' own).
  std::string_view default_connections = "";
  // What one measurement is, for the start-up line; null: the request-count/seconds text.
  std::string (*describe)(const bench_options& options) = nullptr;
  // Server environment the scenario needs ("K=V,K=V"), applied under --server-env
  // (which wins) and over the bench's own defaults.
  std::string_view server_env_defaults = "";
  bool uses_connections = true;  // false: --connections means nothing to it (not printed)
  bool uses_repeat = true;       // false: one pass, --repeat means nothing to it (not printed)
};

std::span<const scenario> scenarios();
const scenario* find_scenario(std::string_view name);

// Scenario entry points (one file each).
void run_sessions_scenario(const bench_options& options, bench_target& target, report& out);
void run_streams_scenario(const bench_options& options, bench_target& target, report& out);
std::string describe_streams_scenario(const bench_options& options);
void run_fanout_scenario(const bench_options& options, bench_target& target, report& out);
std::string describe_fanout_scenario(const bench_options& options);
void run_idle_scenario(const bench_options& options, bench_target& target, report& out);
std::string describe_idle_scenario(const bench_options& options);
void run_resume_scenario(const bench_options& options, bench_target& target, report& out);
std::string describe_resume_scenario(const bench_options& options);
void run_sustained_scenario(const bench_options& options, bench_target& target, report& out);
std::string describe_sustained_scenario(const bench_options& options);
void run_frontends_scenario(const bench_options& options, bench_target& target, report& out);
std::string describe_frontends_scenario(const bench_options& options);
void run_upstream_scenario(const bench_options& options, bench_target& target, report& out);
std::string describe_upstream_scenario(const bench_options& options);

}  // namespace agw::bench
