#include "core/settings_parser.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using agw::core::command;
using agw::core::log_format;
using agw::core::parse_command_line;
using agw::core::parse_result;
using agw::core::settings;

using env_map = std::map<std::string, std::string>;

parse_result parse(const std::vector<std::string>& args, const env_map& env = {}) {
  return parse_command_line(args, [&env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

std::string env_name(const std::string& flag) {
  std::string out = "GATEWAY_";
  for (char c : flag) out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

using secs = std::chrono::duration<double>;

// One accepted value of one option and how to see it applied.
struct good_value {
  std::string flag;
  std::string value;
  std::function<bool(const settings&)> applied;
};

const std::vector<good_value>& good_values() {
  static const std::vector<good_value> rows = {
      {"host", "0.0.0.0", [](const settings& s) { return s.host == "0.0.0.0"; }},
      {"host", "::1", [](const settings& s) { return s.host == "::1"; }},
      {"port", "0", [](const settings& s) { return s.port == 0; }},
      {"port", "9090", [](const settings& s) { return s.port == 9090; }},
      {"port", "65535", [](const settings& s) { return s.port == 65535; }},
      {"db-path", "/tmp/x.db", [](const settings& s) { return s.db_path == "/tmp/x.db"; }},
      {"io-threads", "3", [](const settings& s) { return s.io_threads == 3; }},
      {"io-threads", "256", [](const settings& s) { return s.io_threads == 256; }},
      {"store-writer-nice", "0", [](const settings& s) { return s.store_writer_nice == 0; }},
      {"store-writer-nice", "19", [](const settings& s) { return s.store_writer_nice == 19; }},
      {"log-level", "trace", [](const settings& s) { return s.log_level == "trace"; }},
      {"log-level", "off", [](const settings& s) { return s.log_level == "off"; }},
      {"log-level", "critical", [](const settings& s) { return s.log_level == "critical"; }},
      {"log-format", "json", [](const settings& s) { return s.log_format_kind == log_format::json; }},
      {"log-format", "text", [](const settings& s) { return s.log_format_kind == log_format::text; }},
      {"sse-retry-interval", "0", [](const settings& s) { return s.sse_retry_interval == 0ms; }},
      {"sse-retry-interval", "1500", [](const settings& s) { return s.sse_retry_interval == 1500ms; }},
      {"sse-retry-interval", "3600000", [](const settings& s) { return s.sse_retry_interval == 3600000ms; }},
      {"sse-heartbeat-interval", "0.25", [](const settings& s) { return s.sse_heartbeat_interval == secs(0.25); }},
      {"sse-heartbeat-interval", "0.01", [](const settings& s) { return s.sse_heartbeat_interval == secs(0.01); }},
      {"sse-heartbeat-interval", "604800", [](const settings& s) { return s.sse_heartbeat_interval == secs(604800); }},
      {"sse-buffer-size", "1", [](const settings& s) { return s.sse_buffer_size == 1; }},
      {"sse-buffer-size", "5000", [](const settings& s) { return s.sse_buffer_size == 5000; }},
      {"sse-subscriber-queue", "7", [](const settings& s) { return s.sse_subscriber_queue == 7; }},
      {"event-retention", "0", [](const settings& s) { return s.event_retention == 0; }},
      {"event-retention", "250", [](const settings& s) { return s.event_retention == 250; }},
      {"max-body-bytes", "64", [](const settings& s) { return s.max_body_bytes == 64; }},
      {"max-body-bytes", "2097152", [](const settings& s) { return s.max_body_bytes == 2097152; }},
      {"max-header-bytes", "1024", [](const settings& s) { return s.max_header_bytes == 1024; }},
      {"header-timeout", "2.5", [](const settings& s) { return s.header_timeout == secs(2.5); }},
      {"idle-timeout", "120", [](const settings& s) { return s.idle_timeout == secs(120); }},
      {"write-timeout", "0.5", [](const settings& s) { return s.write_timeout == secs(0.5); }},
      {"webhook-secret",
       "whsec_MDEyMzQ1Njc4OWFiY2RlZg==", [](const settings& s) { return s.webhook_secret == "whsec_MDEyMzQ1Njc4OWFiY2RlZg=="; }},
      {"webhook-secret", "", [](const settings& s) { return s.webhook_secret.empty(); }},
      {"webhook-allow-private", "1", [](const settings& s) { return s.webhook_allow_private; }},
      {"webhook-allow-private", "true", [](const settings& s) { return s.webhook_allow_private; }},
      {"webhook-allow-private", "0", [](const settings& s) { return !s.webhook_allow_private; }},
      {"webhook-allow-private", "false", [](const settings& s) { return !s.webhook_allow_private; }},
      {"webhook-retry-schedule", "1,2.5,3",
       [](const settings& s) {
         return s.webhook_retry_schedule == std::vector<secs>{secs(1), secs(2.5), secs(3)};
       }},
      {"webhook-retry-schedule", " 1 , 2 ",
       [](const settings& s) {
         return s.webhook_retry_schedule == std::vector<secs>{secs(1), secs(2)};
       }},
      {"webhook-retry-schedule", "0", [](const settings& s) { return s.webhook_retry_schedule == std::vector<secs>{secs(0)}; }},
      {"webhook-retry-schedule", "", [](const settings& s) { return s.webhook_retry_schedule.empty(); }},
      {"webhook-allowlist", "hooks.internal, 10.0.0.0/8,::1",
       [](const settings& s) {
         return s.webhook_allowlist == std::vector<std::string>{"hooks.internal", "10.0.0.0/8", "::1"};
       }},
      {"webhook-allowlist", "", [](const settings& s) { return s.webhook_allowlist.empty(); }},
      {"webhook-connect-timeout", "0.5", [](const settings& s) { return s.webhook_connect_timeout == secs(0.5); }},
      {"webhook-timeout", "2", [](const settings& s) { return s.webhook_timeout == secs(2); }},
      {"webhook-concurrency", "4", [](const settings& s) { return s.webhook_concurrency == 4; }},
      {"webhook-ca-file", "/etc/ssl/x.pem", [](const settings& s) { return s.webhook_ca_file == "/etc/ssl/x.pem"; }},
      {"drain-timeout", "0", [](const settings& s) { return s.drain_timeout == secs(0); }},
      {"drain-timeout", "45", [](const settings& s) { return s.drain_timeout == secs(45); }},
      {"max-connections", "0", [](const settings& s) { return s.max_connections == 0; }},
      {"max-connections", "200", [](const settings& s) { return s.max_connections == 200; }},
      {"max-runs", "3", [](const settings& s) { return s.max_runs == 3; }},
      {"rate-limit", "2.5", [](const settings& s) { return s.rate_limit == 2.5; }},
      {"rate-limit", "0", [](const settings& s) { return s.rate_limit == 0; }},
      {"rate-burst", "40", [](const settings& s) { return s.rate_burst == 40; }},
      {"access-log", "0", [](const settings& s) { return !s.access_log; }},
      {"access-log", "true", [](const settings& s) { return s.access_log; }},
      {"openai-base-url", "http://localhost:1234/v1",
       [](const settings& s) { return s.openai_base_url == "http://localhost:1234/v1"; }},
      {"openai-api-key", "sk-test", [](const settings& s) { return s.openai_api_key == "sk-test"; }},
      {"openai-model", "gpt-x", [](const settings& s) { return s.openai_model == "gpt-x"; }},
      {"tool-timeout", "0.001", [](const settings& s) { return s.tool_timeout == secs(0.001); }},
      {"tool-timeout", "3", [](const settings& s) { return s.tool_timeout == secs(3); }},
  };
  return rows;
}

struct bad_value {
  std::string flag;
  std::string value;
};

const std::vector<bad_value>& bad_values() {
  static const std::vector<bad_value> rows = {
      {"host", ""},
      {"port", "abc"},
      {"port", "70000"},
      {"port", "65536"},
      {"port", "-1"},
      {"port", ""},
      {"port", "80x"},
      {"port", " 80"},
      {"port", "8080 "},
      {"port", "+80"},
      {"db-path", ""},
      {"io-threads", "257"},
      {"io-threads", "-1"},
      {"store-writer-nice", "20"},
      {"store-writer-nice", "-1"},
      {"store-writer-nice", "5.5"},
      {"log-level", "bogus"},
      {"log-level", "INFO"},
      {"log-level", ""},
      {"log-format", "xml"},
      {"sse-retry-interval", "-1"},
      {"sse-retry-interval", "3600001"},
      {"sse-retry-interval", "1.5"},
      {"sse-heartbeat-interval", "-1"},
      {"sse-heartbeat-interval", "0"},
      {"sse-heartbeat-interval", "abc"},
      {"sse-heartbeat-interval", "0.001"},
      {"sse-heartbeat-interval", "604801"},
      {"sse-heartbeat-interval", "nan"},
      {"sse-heartbeat-interval", "inf"},
      {"sse-heartbeat-interval", ""},
      {"sse-buffer-size", "0"},
      {"sse-buffer-size", "1000001"},
      {"sse-subscriber-queue", "0"},
      {"event-retention", "-5"},
      {"max-body-bytes", "63"},
      {"max-header-bytes", "1023"},
      {"header-timeout", "0"},
      {"idle-timeout", "x"},
      {"write-timeout", "-0.5"},
      {"webhook-secret", "MDEyMzQ1Njc4OWFiY2RlZg=="},        // not whsec_
      {"webhook-secret", "whsec_!!!!!!!!!!!!!!!!!!!!!!!!"},  // bad base64
      {"webhook-secret", "whsec_MDEyMzQ1Njc4OWFiY2RlZg="},   // bad length
      {"webhook-secret", "whsec_MDEyMzQ1Njc4OWFiY2Rl"},      // 15 bytes: too short
      {"webhook-secret", "whsec_"},
      {"webhook-allow-private", "2"},
      {"webhook-allow-private", "yes"},
      {"webhook-allow-private", ""},
      {"webhook-retry-schedule", "1,,2"},
      {"webhook-retry-schedule", "a"},
      {"webhook-retry-schedule", "1,"},
      {"webhook-retry-schedule", ",1"},
      {"webhook-retry-schedule", "1,-2"},
      {"webhook-retry-schedule", "604801"},
      {"webhook-allowlist", "10.0.0.0/33"},
      {"webhook-allowlist", "a b"},
      {"webhook-allowlist", "a,,b"},
      {"webhook-allowlist", "a,"},
      {"webhook-allowlist", "http://x"},
      {"webhook-connect-timeout", "0"},
      {"webhook-timeout", "-1"},
      {"webhook-concurrency", "0"},
      {"webhook-concurrency", "1025"},
      {"drain-timeout", "-1"},
      {"max-connections", "-1"},
      {"max-connections", "many"},
      {"max-runs", "1.5"},
      {"rate-limit", "-1"},
      {"rate-limit", "fast"},
      {"rate-limit", "nan"},
      {"rate-burst", "0"},
      {"rate-burst", "0.5"},
      {"access-log", "yes"},
      {"openai-base-url", "ftp://x"},
      {"openai-base-url", "api.openai.com"},
      {"tool-timeout", "0"},
  };
  return rows;
}

}  // namespace

TEST_CASE("settings_parser: defaults") {
  const auto r = parse({});
  REQUIRE(r.value);
  CHECK(r.error.empty());
  CHECK(r.value->cmd == command::serve);
  CHECK_FALSE(r.value->rebuild_session);
  CHECK_FALSE(r.value->rebuild_all);
  const settings& s = r.value->config;
  CHECK(s.host == "127.0.0.1");
  CHECK(s.port == 8080);
  CHECK(s.db_path == "./data/gateway.db");
  CHECK(s.io_threads == 0);
  CHECK(s.log_level == "info");
  CHECK(s.log_format_kind == log_format::text);
  CHECK(s.sse_retry_interval == 3000ms);
  CHECK(s.sse_heartbeat_interval == secs(15));
  CHECK(s.sse_buffer_size == 100);
  CHECK(s.sse_subscriber_queue == 8192);
  CHECK(s.event_retention == 0);
  CHECK(s.max_body_bytes == 1024 * 1024);
  CHECK(s.max_header_bytes == 16 * 1024);
  CHECK(s.header_timeout == secs(10));
  CHECK(s.idle_timeout == secs(60));
  CHECK(s.write_timeout == secs(30));
  CHECK(s.webhook_secret.empty());
  CHECK_FALSE(s.webhook_allow_private);
  CHECK(s.webhook_retry_schedule ==
        std::vector<secs>{secs(5), secs(300), secs(1800), secs(7200), secs(18000), secs(36000), secs(36000)});
  CHECK(s.drain_timeout == secs(30));
  CHECK(s.max_connections == 50000);
  CHECK(s.max_runs == 1000);
  CHECK(s.rate_limit == 0);
  CHECK(s.rate_burst == 20);
  CHECK(s.access_log);
  CHECK(s.openai_base_url == "https://api.openai.com/v1");
  CHECK(s.openai_api_key.empty());
  CHECK(s.openai_model == "gpt-4o-mini");
  CHECK(s.tool_timeout == secs(10));
  // "serve" spelled out is the same command.
  const auto serve = parse({"serve"});
  REQUIRE(serve.value);
  CHECK(serve.value->cmd == command::serve);
}

TEST_CASE("settings_parser: every option from env, --x=v and --x v") {
  for (const auto& row : good_values()) {
    CAPTURE(row.flag);
    CAPTURE(row.value);
    const auto from_env = parse({}, {{env_name(row.flag), row.value}});
    REQUIRE_MESSAGE(from_env.value, from_env.error);
    CHECK(row.applied(from_env.value->config));

    const auto joined = parse({"--" + row.flag + "=" + row.value});
    REQUIRE_MESSAGE(joined.value, joined.error);
    CHECK(row.applied(joined.value->config));

    const auto separate = parse({"--" + row.flag, row.value});
    REQUIRE_MESSAGE(separate.value, separate.error);
    CHECK(row.applied(separate.value->config));

    const auto after_command = parse({"serve", "--" + row.flag, row.value});
    REQUIRE_MESSAGE(after_command.value, after_command.error);
    CHECK(row.applied(after_command.value->config));
  }
}

TEST_CASE("settings_parser: every option in the usage text") {
  const auto usage = agw::core::usage_text();
  for (const auto& row : good_values()) {
    CAPTURE(row.flag);
    CHECK(usage.find("--" + row.flag) != std::string::npos);
    CHECK(usage.find(env_name(row.flag)) != std::string::npos);
  }
}

TEST_CASE("settings_parser: a flag wins over its variable") {
  const auto r = parse({"--port=9001", "--log-level", "debug"},
                       {{"GATEWAY_PORT", "9000"}, {"GATEWAY_LOG_LEVEL", "error"}, {"GATEWAY_HOST", "10.0.0.1"}});
  REQUIRE_MESSAGE(r.value, r.error);
  CHECK(r.value->config.port == 9001);
  CHECK(r.value->config.log_level == "debug");
  CHECK(r.value->config.host == "10.0.0.1");  // no flag: the variable applies
  // A flag wins even over a bad variable: the variable is not read at all.
  const auto bad_env = parse({"--port=9001"}, {{"GATEWAY_PORT", "abc"}});
  REQUIRE_MESSAGE(bad_env.value, bad_env.error);
  CHECK(bad_env.value->config.port == 9001);
  // The last of repeated flags wins.
  const auto twice = parse({"--port=1", "--port", "2"});
  REQUIRE(twice.value);
  CHECK(twice.value->config.port == 2);
  // Unrelated variables are ignored.
  const auto other = parse({}, {{"GATEWAY_NOPE", "x"}, {"PORT", "1"}});
  REQUIRE(other.value);
  CHECK(other.value->config.port == 8080);
}

TEST_CASE("settings_parser: bad values give an error naming the setting") {
  for (const auto& row : bad_values()) {
    CAPTURE(row.flag);
    CAPTURE(row.value);
    const auto from_env = parse({}, {{env_name(row.flag), row.value}});
    CHECK_FALSE(from_env.value);
    CHECK(from_env.error.find(env_name(row.flag)) != std::string::npos);

    const auto joined = parse({"--" + row.flag + "=" + row.value});
    CHECK_FALSE(joined.value);
    CHECK(joined.error.find("--" + row.flag) != std::string::npos);

    const auto separate = parse({"--" + row.flag, row.value});
    CHECK_FALSE(separate.value);
    CHECK(separate.error.find("--" + row.flag) != std::string::npos);
  }
}

TEST_CASE("settings_parser: schedule longer than 50 delays is refused") {
  std::string fifty, fifty_one;
  for (int i = 0; i < 50; ++i) fifty += (i ? "," : "") + std::to_string(i);
  fifty_one = fifty + ",50";
  const auto ok = parse({"--webhook-retry-schedule=" + fifty});
  REQUIRE_MESSAGE(ok.value, ok.error);
  CHECK(ok.value->config.webhook_retry_schedule.size() == 50);
  const auto bad = parse({"--webhook-retry-schedule=" + fifty_one});
  CHECK_FALSE(bad.value);
  CHECK(bad.error.find("webhook-retry-schedule") != std::string::npos);
}

TEST_CASE("settings_parser: --help, -h and --version stop parsing") {
  for (const char* flag : {"--help", "-h"}) {
    CAPTURE(flag);
    const auto r = parse({flag});
    REQUIRE(r.value);
    CHECK(r.value->cmd == command::help);
    // Even when later arguments are bad.
    const auto early = parse({flag, "--bogus"});
    REQUIRE(early.value);
    CHECK(early.value->cmd == command::help);
  }
  const auto v = parse({"--version"});
  REQUIRE(v.value);
  CHECK(v.value->cmd == command::version);
  const auto usage = agw::core::usage_text();
  CHECK(usage.find("usage: agent-gateway") != std::string::npos);
  CHECK(usage.find("rebuild (--session ID | --all)") != std::string::npos);
}

TEST_CASE("settings_parser: unknown flags, commands and arguments") {
  struct row {
    std::vector<std::string> args;
    std::string error_mentions;
  };
  const row rows[] = {
      {{"--bogus"}, "--bogus"},
      {{"--bogus=1"}, "--bogus"},
      {{"--port=1", "--nope", "x"}, "--nope"},
      {{"deploy"}, "deploy"},
      {{"serve", "extra"}, "extra"},
      {{"-p", "80"}, "-p"},
      {{"--port"}, "--port needs a value"},
      {{"--all"}, "--all"},               // only meaningful for rebuild
      {{"--session", "x"}, "--session"},  // idem
  };
  for (const auto& r : rows) {
    CAPTURE(r.error_mentions);
    const auto result = parse(r.args);
    CHECK_FALSE(result.value);
    CHECK(result.error.find(r.error_mentions) != std::string::npos);
  }
}

TEST_CASE("settings_parser: rebuild needs exactly one of --session or --all") {
  struct row {
    std::vector<std::string> args;
    bool ok;
    std::optional<std::string> session;
    bool all;
  };
  const row rows[] = {
      {{"rebuild", "--session", "abc"}, true, "abc", false},
      {{"rebuild", "--session=abc"}, true, "abc", false},
      {{"rebuild", "--all"}, true, std::nullopt, true},
      {{"rebuild", "--all", "--db-path", "/tmp/y.db"}, true, std::nullopt, true},
      {{"rebuild"}, false, std::nullopt, false},
      {{"rebuild", "--all", "--session", "abc"}, false, std::nullopt, false},
      {{"rebuild", "--session"}, false, std::nullopt, false},
      {{"rebuild", "--session="}, false, std::nullopt, false},
      {{"rebuild", "--db-path", "/tmp/y.db"}, false, std::nullopt, false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.args.size());
    CAPTURE(r.args.back());
    const auto result = parse(r.args);
    REQUIRE(result.value.has_value() == r.ok);
    if (r.ok) {
      CHECK(result.value->cmd == command::rebuild);
      CHECK(result.value->rebuild_session == r.session);
      CHECK(result.value->rebuild_all == r.all);
    } else {
      CHECK_FALSE(result.error.empty());
    }
  }
  const auto with_path = parse({"rebuild", "--all", "--db-path", "/tmp/y.db"});
  REQUIRE(with_path.value);
  CHECK(with_path.value->config.db_path == "/tmp/y.db");
}

TEST_CASE("settings: GATEWAY_REDIS_URL is a redis:// URL and needs the postgres store") {
  const env_map pg{{"GATEWAY_STORE", "postgres"}, {"GATEWAY_PG_URL", "postgresql://agw@127.0.0.1/gateway"}};
  auto env = pg;
  env["GATEWAY_REDIS_URL"] = "redis://127.0.0.1:6380";
  auto ok = parse({}, env);
  REQUIRE(ok.value);
  CHECK(ok.value->config.redis_url == "redis://127.0.0.1:6380");
  CHECK(parse({}, pg).value->config.redis_url.empty());
  for (const char* bad : {"http://127.0.0.1:6379", "redis://", "127.0.0.1:6379", "redis://u:p@127.0.0.1"}) {
    CAPTURE(bad);
    env["GATEWAY_REDIS_URL"] = bad;
    CHECK_FALSE(parse({}, env).value);
  }
  auto single = parse({}, {{"GATEWAY_REDIS_URL", "redis://127.0.0.1"}});
  CHECK_FALSE(single.value);
  CHECK(single.error.find("--store=postgres") != std::string::npos);
}
