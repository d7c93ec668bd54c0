// agent-gateway: parse configuration, open storage, serve (or rebuild) — nothing else.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "core/clock.hpp"
#include "core/ids.hpp"
#include "core/recovery.hpp"
#include "core/settings_parser.hpp"
#include "gateway/json_log_formatter.hpp"
#include "gateway/server.hpp"
#include "persistence/migrations.hpp"
#include "persistence/postgres/pg_backend.hpp"
#include "persistence/projection_rebuild.hpp"
#include "persistence/redis/redis_fanout.hpp"
#include "persistence/sqlite_backend.hpp"
#include "persistence/sqlite_store.hpp"

namespace {

void configure_logging(const agw::core::settings& config) {
  auto logger = spdlog::stderr_color_mt("gateway");
  if (config.log_format_kind == agw::core::log_format::json)
    logger->set_formatter(agw::gateway::make_json_log_formatter());
  else
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v", spdlog::pattern_time_type::utc);
  logger->set_level(spdlog::level::from_str(config.log_level));
  spdlog::set_default_logger(logger);
}

void ensure_parent_directory(const std::string& db_path) {
  auto parent = std::filesystem::path(db_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
}

// GATEWAY_STORE=postgres (docs/scale-out.md): migrate, repair, serve, as below on SQLite.
int serve_on_postgres(const agw::core::settings& config, const agw::core::clock& clock) {
  {
    agw::persistence::pg::pg_store first(config.pg_url, config.node_id);
    agw::persistence::pg::prepare_database(first);
    // Runs another node still owns (a live lease) are left to it; the rest (lapsed
    // leases, none at all) are closed, each under its lease (docs/scale-out.md).
    const agw::core::repair_lease lease{config.node_id,
                                        std::chrono::duration_cast<std::chrono::milliseconds>(config.run_lease).count()};
    auto report = agw::core::recover_at_startup(first, clock, lease);
    if (report.runs_interrupted || report.projections_rebuilt)
      spdlog::warn("start-up repair: {} interrupted runs closed, {} projections rebuilt ({} sessions checked)",
                   report.runs_interrupted, report.projections_rebuilt, report.sessions_checked);
  }
  agw::persistence::pg::pg_backend storage(config.pg_url, config.node_id, config.store_writer_nice);
  // GATEWAY_REDIS_URL: the live fan-out between the nodes (docs/scale-out.md); it outlives
  // the server, which starts and stops it.
  std::unique_ptr<agw::persistence::redis::redis_fanout> fanout;
  if (!config.redis_url.empty()) fanout = std::make_unique<agw::persistence::redis::redis_fanout>(config.redis_url);
  agw::gateway::server server(config, storage.backend(), clock, fanout.get());
  struct stop_store_first {
    agw::persistence::pg::pg_backend& storage;
    ~stop_store_first() { storage.stop(); }
  } stop_first{storage};
  return server.run();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = agw::core::parse_command_line(args, [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  });
  if (!parsed.value) {
    std::fprintf(stderr, "agent-gateway: %s\n", parsed.error.c_str());
    return 2;
  }
  const auto& cli = *parsed.value;
  if (cli.cmd == agw::core::command::help) {
    std::fputs(agw::core::usage_text().c_str(), stdout);
    return 0;
  }
  if (cli.cmd == agw::core::command::version) {
    std::puts("agent-gateway 0.1.0");
    return 0;
  }
  auto config = cli.config;
  configure_logging(config);
  // This process's name in run leases: unique per process unless the operator names it.
  if (config.node_id.empty()) config.node_id = agw::core::new_uuid();
  spdlog::info("node id {}", config.node_id);
  // The process's one clock: every timestamp, TTL, due time and timer below reads it.
  const agw::core::real_clock clock;
  try {
    if (config.store == agw::core::store_kind::postgres) {
      if (cli.cmd == agw::core::command::rebuild) throw std::runtime_error("rebuild works on the sqlite store only");
      return serve_on_postgres(config, clock);
    }
    ensure_parent_directory(config.db_path);
    if (cli.cmd == agw::core::command::rebuild) {
      agw::persistence::sqlite_store store(config.db_path);
      agw::persistence::migrate(store.database());
      return agw::persistence::rebuild_offline(store, cli.rebuild_session);
    }
    // Ours until the process ends: a second gateway on this database stops here.
    const agw::persistence::journal_dir_lock journal_lock(agw::persistence::journal_dir_for(config.db_path));
    {
      agw::persistence::sqlite_store first(config.db_path);
      const auto folded = agw::persistence::prepare_database(first, agw::persistence::journal_dir_for(config.db_path));
      auto report = agw::core::recover_at_startup(first, clock);
      if (report.runs_interrupted || report.projections_rebuilt || folded)
        spdlog::warn(
            "start-up repair: {} journal records folded, {} interrupted runs closed, {} projections rebuilt ({} sessions "
            "checked)",
            folded, report.runs_interrupted, report.projections_rebuilt, report.sessions_checked);
    }
    agw::persistence::sqlite_backend storage(config.db_path, {.segment_age = config.event_segment_age}, config.store_writer_nice);
    agw::gateway::server server(config, storage.backend(), clock);
    // However run() ends (an exception too), every queued write is committed before the
    // server goes: job completions land in its (stopped) io_context, destroyed with it
    // only afterwards.
    struct stop_store_first {
      agw::persistence::sqlite_backend& storage;
      ~stop_store_first() { storage.stop(); }
    } stop_first{storage};
    return server.run();
  } catch (const std::exception& e) {
    spdlog::critical("start-up failed: {}", e.what());
    std::fprintf(stderr, "agent-gateway: %s\n", e.what());
    return 1;
  }
}
