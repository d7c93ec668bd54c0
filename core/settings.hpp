#pragma once
// Runtime configuration: plain data with named defaults. Parsed once at start-up
// (settings_parser) and read-only afterwards, so any thread may read it.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/api_key_entry.hpp"

namespace agw::core {

enum class log_format { text, json };
// Where sessions, conversations and the event log live (docs/scale-out.md).
enum class store_kind { sqlite, postgres };

struct settings {
  static constexpr const char* default_host = "127.0.0.1";
  static constexpr std::uint16_t default_port = 8080;
  static constexpr const char* default_db_path = "./data/gateway.db";

  std::string host = default_host;
  std::uint16_t port = default_port;
  std::string db_path = default_db_path;
  store_kind store = store_kind::sqlite;
  std::string pg_url;     // libpq connection URL of the postgres store
  std::string redis_url;  // redis://host[:port] of the cross-node fan-out (docs/scale-out.md); empty: none
  // Run ownership across nodes (docs/scale-out.md): this process's name in run leases
  // (empty: a random UUID per process) and how long a lease lasts unrenewed (renewed
  // every third of it); lease time is failover time.
  std::string node_id;
  std::chrono::duration<double> run_lease{10.0};
  unsigned io_threads = 0;  // 0: one per core
  // The store writer's and the WAL checkpointer's nice value above the process's
  // (core/thread_priority.hpp); 0 leaves them at the io threads' priority.
  int store_writer_nice = 10;
  std::string log_level = "info";
  log_format log_format_kind = log_format::text;

  std::chrono::milliseconds sse_retry_interval{3000};
  std::chrono::duration<double> sse_heartbeat_interval{15.0};
  std::size_t sse_buffer_size = 100;
  std::size_t sse_subscriber_queue =
      8192;                         // frames queued per subscriber before it catches up page by page instead (pointers only)
  std::size_t event_retention = 0;  // events kept per session in the log; 0 = all
  // The longest a committed event stays in the event journal only before its session's tail
  // is written as a segment (docs/streaming.md, "The event log"). Not a flag: a tuning constant.
  std::chrono::milliseconds event_segment_age{30'000};

  std::size_t max_body_bytes = 1024 * 1024;
  std::size_t max_header_bytes = 16 * 1024;
  std::chrono::duration<double> header_timeout{10.0};
  std::chrono::duration<double> idle_timeout{60.0};
  std::chrono::duration<double> write_timeout{30.0};

  std::string webhook_secret;  // "whsec_<base64>", empty: unsigned
  bool webhook_allow_private = false;
  // Host names or CIDRs (e.g. "hooks.internal", "10.1.0.0/16") allowed even when private.
  std::vector<std::string> webhook_allowlist;
  std::vector<std::chrono::duration<double>> webhook_retry_schedule{
      std::chrono::duration<double>(5),    std::chrono::duration<double>(300),   std::chrono::duration<double>(1800),
      std::chrono::duration<double>(7200), std::chrono::duration<double>(18000), std::chrono::duration<double>(36000),
      std::chrono::duration<double>(36000)};
  std::chrono::duration<double> webhook_connect_timeout{5.0};  // resolve + connect + TLS handshake
  std::chrono::duration<double> webhook_timeout{10.0};         // send the request and read the response header
  std::size_t webhook_concurrency = 16;                        // deliveries in flight at once
  std::string webhook_ca_file;                                 // extra CA bundle for https callbacks (default: system)
  std::chrono::duration<double> drain_timeout{30.0};
  // Session TTL (docs/sessions.md): idle seconds before a session without its own
  // ttl_seconds expires (0: never), and how often the sweep looks.
  std::int64_t session_ttl = 0;
  std::chrono::duration<double> session_sweep_interval{60.0};
  // Seconds a session's channel (its live state in memory) stays once it has no run, no
  // subscriber and nothing on its way to the store; 0: kept until the session is deleted
  // (docs/architecture.md, "Channels in memory").
  std::chrono::duration<double> channel_idle{60.0};
  // Test only: a file holding milliseconds the TTL sweep adds to the wall clock, re-read
  // at every sweep, so a test expires sessions without waiting (tests/integration).
  std::string test_clock_offset_file;
  // Operations limits and logs (docs/operations.md).
  std::size_t max_connections = 50000;  // open client connections; over it: accepted, answered 503, closed; 0 = no limit
  std::size_t max_runs = 1000;          // live runs; over it a new run is a 503; 0 = no limit
  double rate_limit = 0;                // requests/s per client (API key or address); 0 = off
  double rate_burst = 20;               // requests a client may make at once before rate_limit applies
  bool access_log = true;               // one info line per request

  std::string openai_base_url = "https://api.openai.com/v1";
  std::string openai_api_key;
  std::string openai_model = "gpt-4o-mini";
  std::string openai_ca_file;                                  // extra CA bundle for https upstreams (default: system)
  std::chrono::duration<double> openai_connect_timeout{10.0};  // resolve + connect + TLS handshake with the upstream
  std::chrono::duration<double> openai_idle_timeout{60.0};     // the longest upstream silence before upstream_timeout
  unsigned openai_max_steps = 8;                               // tool rounds per run before tool_step_limit
  unsigned openai_max_retries = 2;                             // retries of a failed upstream request, before its first token
  std::string agent_profiles_file;                             // JSON agent profiles (docs/providers.md); "" = none
  std::chrono::duration<double> tool_timeout{10.0};

  // Auth, stream tokens and CORS (docs/security-and-metrics.md). No keys and no keys
  // file: auth is off.
  std::vector<api_key_entry> api_keys;  // GATEWAY_API_KEYS: "key" or "key:tenant", comma-separated
  std::string api_keys_file;            // one entry per line; re-read on SIGHUP
  std::string metrics_key;              // when set, the only key /metrics accepts
  std::string stream_token_secret;      // HMAC key of stream tokens; empty: random per process
  std::chrono::duration<double> stream_token_ttl{300.0};
  std::vector<std::string> cors_origins;  // exact origins ("https://app.example"), or "*"
};

}  // namespace agw::core
