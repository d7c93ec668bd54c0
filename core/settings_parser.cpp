#include "core/settings_parser.hpp"

#include <boost/url/parse.hpp>
#include <charconv>
#include <cmath>
#include <set>
#include <sstream>
#include <string_view>

#include "core/api_key_entry.hpp"
#include "core/webhooks/address_policy.hpp"
#include "core/webhooks/webhook_secret.hpp"

namespace agw::core {
namespace {

// One configurable setting: its flag/variable name and how to apply a textual value.
struct option {
  std::string name;  // flag without "--"; the variable is GATEWAY_ + upper(name) with '-' -> '_'
  std::string help;
  std::function<std::string(settings&, std::string_view)> apply;  // returns an error or ""
};

std::string env_name(const std::string& flag) {
  std::string out = "GATEWAY_";
  for (char c : flag) out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

template <class T>
std::optional<T> parse_integer(std::string_view text) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::optional<double> parse_seconds(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  if (!std::isfinite(value) || value < 0) return std::nullopt;
  return value;
}

// Option factories keep the table below one line per setting.
template <class T>
option integer_option(std::string name, std::string help, T settings::*member, T min, T max) {
  return {name, std::move(help), [member, min, max](settings& s, std::string_view v) -> std::string {
            auto n = parse_integer<T>(v);
            if (!n || *n < min || *n > max)
              return "must be an integer from " + std::to_string(min) + " to " + std::to_string(max);
            s.*member = *n;
            return "";
          }};
}

option seconds_option(std::string name, std::string help, std::chrono::duration<double> settings::*member, double min_seconds) {
  return {name, std::move(help), [member, min_seconds](settings& s, std::string_view v) -> std::string {
            auto n = parse_seconds(v);
            if (!n || *n < min_seconds || *n > 86400.0 * 7)
              return "must be a number of seconds from " + std::to_string(min_seconds) + " to 604800";
            s.*member = std::chrono::duration<double>(*n);
            return "";
          }};
}

option number_option(std::string name, std::string help, double settings::*member, double min, double max) {
  return {name, std::move(help), [member, min, max](settings& s, std::string_view v) -> std::string {
            auto n = parse_seconds(v);  // the same shape: a finite non-negative decimal
            if (!n || *n < min || *n > max) return "must be a number from " + std::to_string(min) + " to " + std::to_string(max);
            s.*member = *n;
            return "";
          }};
}

option string_option(std::string name, std::string help, std::string settings::*member) {
  return {name, std::move(help), [member](settings& s, std::string_view v) -> std::string {
            s.*member = std::string(v);
            return "";
          }};
}

std::string parse_schedule(settings& s, std::string_view text) {
  std::vector<std::chrono::duration<double>> schedule;
  while (!text.empty()) {
    auto comma = text.find(',');
    auto item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    auto n = parse_seconds(item);
    if (!n || *n > 86400.0 * 7) return "must be comma-separated non-negative seconds (each at most 604800)";
    schedule.emplace_back(*n);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return "must not end with a comma";
  }
  if (schedule.size() > 50) return "must have at most 50 delays";
  s.webhook_retry_schedule = std::move(schedule);
  return "";
}

std::string parse_allowlist(settings& s, std::string_view text) {
  std::vector<std::string> entries;
  while (!text.empty()) {
    auto comma = text.find(',');
    auto item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) return "must be comma-separated host names or CIDRs";
    if (!parse_allowlist_entry(item)) return "'" + std::string(item) + "' is neither a host name nor a CIDR such as 10.0.0.0/8";
    entries.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return "must not end with a comma";
  }
  s.webhook_allowlist = std::move(entries);
  return "";
}

std::string parse_api_keys(settings& s, std::string_view text) {
  try {
    s.api_keys = parse_api_key_list(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// An origin as browsers send it: scheme://host[:port], nothing after; or "*".
bool valid_origin(std::string_view o) {
  if (o == "*") return true;
  std::string_view rest;
  if (o.starts_with("http://"))
    rest = o.substr(7);
  else if (o.starts_with("https://"))
    rest = o.substr(8);
  else
    return false;
  if (rest.empty()) return false;
  for (char c : rest)
    if (c == '/' || c == '?' || c == '#' || c <= ' ' || c >= 0x7f) return false;
  return true;
}

std::string parse_cors_origins(settings& s, std::string_view text) {
  std::vector<std::string> origins;
  while (!text.empty()) {
    const auto comma = text.find(',');
    auto item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!valid_origin(item)) return "'" + std::string(item) + "' is not an origin such as https://app.example:8443, or *";
    origins.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  s.cors_origins = std::move(origins);
  return "";
}

// The auth and CORS block of the option table.
void add_access_options(std::vector<option>& t) {
  t.push_back({"api-keys", "comma-separated API keys, each 'key' or 'key:tenant' (default none: auth off)", parse_api_keys});
  t.push_back(string_option("api-keys-file", "file of API keys, one 'key[:tenant]' a line, re-read on SIGHUP (default none)",
                            &settings::api_keys_file));
  t.push_back({"metrics-key", "bearer key /metrics requires instead of an API key (default none)",
               [](settings& s, std::string_view v) -> std::string {
                 std::string error;
                 if (!v.empty() && !parse_api_key_entry(v, error)) return error;
                 if (v.find(':') != std::string_view::npos) return "must not name a tenant";
                 s.metrics_key = std::string(v);
                 return "";
               }});
  t.push_back({"stream-token-secret", "HMAC secret for stream tokens, at least 32 characters (default: random per process)",
               [](settings& s, std::string_view v) -> std::string {
                 if (!v.empty() && v.size() < 32) return "must be at least 32 characters";
                 s.stream_token_secret = std::string(v);
                 return "";
               }});
  t.push_back(
      seconds_option("stream-token-ttl", "seconds a stream token stays valid (default 300)", &settings::stream_token_ttl, 0.1));
  t.push_back({"cors-origins", "comma-separated allowed browser origins, or * (default none: no CORS)", parse_cors_origins});
}

const std::vector<option>& options() {
  static const std::vector<option> table = [] {
    std::vector<option> t;
    t.push_back({"host", "address to listen on (default 127.0.0.1)", [](settings& s, std::string_view v) -> std::string {
                   if (v.empty()) return "must not be empty";
                   s.host = std::string(v);
                   return "";
                 }});
    t.push_back(integer_option<std::uint16_t>("port", "TCP port; 0 picks a free one (default 8080)", &settings::port, 0, 65535));
    t.push_back(
        {"db-path", "SQLite database file (default ./data/gateway.db)", [](settings& s, std::string_view v) -> std::string {
           if (v.empty()) return "must not be empty";
           s.db_path = std::string(v);
           return "";
         }});
    t.push_back({"store", "sqlite|postgres (default sqlite; postgres needs --pg-url)",
                 [](settings& s, std::string_view v) -> std::string {
                   if (v == "sqlite")
                     s.store = store_kind::sqlite;
                   else if (v == "postgres")
                     s.store = store_kind::postgres;
                   else
                     return "must be sqlite or postgres";
                   return "";
                 }});
    t.push_back(
        string_option("pg-url", "PostgreSQL URL of the postgres store, e.g. postgresql://user@host:5432/db", &settings::pg_url));
    t.push_back({"redis-url", "Redis of the cluster's live fan-out, redis://host[:port] (default none: a single node)",
                 [](settings& s, std::string_view v) -> std::string {
                   auto url = boost::urls::parse_uri(v);
                   if (v.empty()) {
                     s.redis_url.clear();
                     return "";
                   }
                   if (!url || url->scheme() != "redis" || url->host().empty() || url->has_userinfo() ||
                       (url->has_port() && (url->port_number() == 0)))
                     return "must be redis://host[:port]";
                   s.redis_url = std::string(v);
                   return "";
                 }});
    t.push_back(string_option("node-id", "this node's name in run leases, unique per process (default: a random UUID)",
                              &settings::node_id));
    t.push_back(seconds_option("run-lease", "seconds a run's lease lasts unrenewed; renewed every third (default 10)",
                               &settings::run_lease, 0.3));
    t.push_back(
        integer_option<unsigned>("io-threads", "io threads; 0 = one per core (default 0)", &settings::io_threads, 0, 256));
    t.push_back(integer_option<int>("store-writer-nice",
                                    "nice levels the store's writer and WAL checkpointer run below the io threads, 0-19 "
                                    "(default 10)",
                                    &settings::store_writer_nice, 0, 19));
    t.push_back({"log-level", "trace|debug|info|warn|error|critical|off (default info)",
                 [](settings& s, std::string_view v) -> std::string {
                   for (auto level : {"trace", "debug", "info", "warn", "error", "critical", "off"})
                     if (v == level) {
                       s.log_level = std::string(v);
                       return "";
                     }
                   return "must be one of trace, debug, info, warn, error, critical, off";
                 }});
    t.push_back({"log-format", "text|json (JSON lines) (default text)", [](settings& s, std::string_view v) -> std::string {
                   if (v == "text")
                     s.log_format_kind = log_format::text;
                   else if (v == "json")
                     s.log_format_kind = log_format::json;
                   else
                     return "must be text or json";
                   return "";
                 }});
    t.push_back({"sse-retry-interval", "retry: hint sent to SSE clients, ms (default 3000)",
                 [](settings& s, std::string_view v) -> std::string {
                   auto n = parse_integer<long long>(v);
                   if (!n || *n < 0 || *n > 3'600'000) return "must be an integer number of milliseconds from 0 to 3600000";
                   s.sse_retry_interval = std::chrono::milliseconds(*n);
                   return "";
                 }});
    t.push_back(seconds_option("sse-heartbeat-interval",
                               "seconds between heartbeats on an idle stream, fractional allowed (default 15)",
                               &settings::sse_heartbeat_interval, 0.01));
    t.push_back(integer_option<std::size_t>("sse-buffer-size", "events held per session in the in-memory ring (default 100)",
                                            &settings::sse_buffer_size, 1, 1'000'000));
    t.push_back(integer_option<std::size_t>(
        "sse-subscriber-queue",
        "frames queued per SSE subscriber before it catches up from memory or the log instead (default 8192)",
        &settings::sse_subscriber_queue, 1, 1'000'000));
    t.push_back(integer_option<std::size_t>("event-retention", "events kept per session in the durable log, 0 = all (default 0)",
                                            &settings::event_retention, 0, std::size_t{1} << 40));
    t.push_back(integer_option<std::size_t>("max-body-bytes", "largest request body accepted (default 1048576)",
                                            &settings::max_body_bytes, 64, std::size_t{1} << 30));
    t.push_back(integer_option<std::size_t>("max-header-bytes", "largest request header block accepted (default 16384)",
                                            &settings::max_header_bytes, 1024, 1024 * 1024));
    t.push_back(seconds_option("header-timeout", "seconds a client has to send a request's header and body (default 10)",
                               &settings::header_timeout, 0.01));
    t.push_back(seconds_option("idle-timeout", "seconds an idle keep-alive connection is kept (default 60)",
                               &settings::idle_timeout, 0.01));
    t.push_back(seconds_option("write-timeout", "seconds one write to a client may take before it is dropped (default 30)",
                               &settings::write_timeout, 0.01));
    t.push_back({"webhook-secret", "whsec_<base64> signing secret for callbacks (default: unsigned)",
                 [](settings& s, std::string_view v) -> std::string {
                   if (v.empty()) {
                     s.webhook_secret.clear();
                     return "";
                   }
                   if (!decode_webhook_secret(v)) return "must be whsec_ followed by base64 of at least 16 bytes";
                   s.webhook_secret = std::string(v);
                   return "";
                 }});
    t.push_back({"webhook-allow-private", "1 allows loopback/private callback targets (default 0)",
                 [](settings& s, std::string_view v) -> std::string {
                   if (v == "1" || v == "true")
                     s.webhook_allow_private = true;
                   else if (v == "0" || v == "false")
                     s.webhook_allow_private = false;
                   else
                     return "must be 0 or 1";
                   return "";
                 }});
    t.push_back({"webhook-retry-schedule",
                 "comma-separated seconds before each retry (default 5,300,1800,7200,18000,36000,36000)", parse_schedule});
    t.push_back({"webhook-allowlist",
                 "comma-separated hosts or CIDRs allowed as callback targets even when private (default none)", parse_allowlist});
    t.push_back(seconds_option("webhook-connect-timeout",
                               "seconds to resolve, connect and handshake with a callback target (default 5)",
                               &settings::webhook_connect_timeout, 0.01));
    t.push_back(seconds_option("webhook-timeout", "seconds a callback target has to answer once connected (default 10)",
                               &settings::webhook_timeout, 0.01));
    t.push_back(integer_option<std::size_t>("webhook-concurrency", "callback deliveries in flight at once (default 16)",
                                            &settings::webhook_concurrency, 1, 1024));
    t.push_back(string_option("webhook-ca-file", "PEM file of extra CAs trusted for https callbacks (default: system store)",
                              &settings::webhook_ca_file));
    t.push_back(seconds_option("drain-timeout", "seconds SIGTERM waits for live runs (default 30)", &settings::drain_timeout, 0));
    t.push_back(integer_option<std::int64_t>("session-ttl", "idle seconds before a session expires, 0 = never (default 0)",
                                             &settings::session_ttl, 0, 366LL * 24 * 3600));
    t.push_back(seconds_option("session-sweep-interval", "seconds between TTL sweeps (default 60)",
                               &settings::session_sweep_interval, 0.05));
    t.push_back(seconds_option("channel-idle",
                               "seconds an idle session's live state stays in memory, 0 = until deleted (default 60)",
                               &settings::channel_idle, 0));
    t.push_back(string_option("test-clock-offset-file",
                              "TEST ONLY: file of milliseconds the TTL sweep adds to the clock (default: none)",
                              &settings::test_clock_offset_file));
    t.push_back(integer_option<std::size_t>("max-connections", "open client connections, 0 = no limit (default 50000)",
                                            &settings::max_connections, 0, 10'000'000));
    t.push_back(integer_option<std::size_t>("max-runs", "live runs at once, 0 = no limit (default 1000)", &settings::max_runs, 0,
                                            10'000'000));
    t.push_back(number_option("rate-limit", "requests per second per API key or address, 0 = off (default 0)",
                              &settings::rate_limit, 0, 1e6));
    t.push_back(number_option("rate-burst", "requests a client may make at once (default 20)", &settings::rate_burst, 1, 1e6));
    t.push_back(
        {"access-log", "1 logs one line per request at info (default 1)", [](settings& s, std::string_view v) -> std::string {
           if (v == "1" || v == "true")
             s.access_log = true;
           else if (v == "0" || v == "false")
             s.access_log = false;
           else
             return "must be 0 or 1";
           return "";
         }});
    t.push_back({"openai-base-url", "base URL of an OpenAI-compatible API (default https://api.openai.com/v1)",
                 [](settings& s, std::string_view v) -> std::string {
                   if (!(v.starts_with("http://") || v.starts_with("https://"))) return "must be an http:// or https:// URL";
                   s.openai_base_url = std::string(v);
                   return "";
                 }});
    t.push_back(string_option("openai-api-key", "API key for the openai provider", &settings::openai_api_key));
    t.push_back(
        string_option("openai-model", "default model for the openai provider (default gpt-4o-mini)", &settings::openai_model));
    t.push_back(string_option("openai-ca-file", "PEM file of extra CAs trusted for https upstreams (default: system store)",
                              &settings::openai_ca_file));
    t.push_back(seconds_option("openai-connect-timeout",
                               "seconds to resolve, connect and handshake with the upstream (default 10)",
                               &settings::openai_connect_timeout, 0.01));
    t.push_back(seconds_option("openai-idle-timeout", "seconds the upstream may be silent mid-answer (default 60)",
                               &settings::openai_idle_timeout, 0.01));
    t.push_back(integer_option<unsigned>("openai-max-steps", "rounds of tool calls per run before tool_step_limit (default 8)",
                                         &settings::openai_max_steps, 1, 1000));
    t.push_back(integer_option<unsigned>("openai-max-retries",
                                         "retries of a failed upstream request before its first token (default 2)",
                                         &settings::openai_max_retries, 0, 10));
    t.push_back(string_option("agent-profiles", "JSON file of agent profiles and model prices (default: none)",
                              &settings::agent_profiles_file));
    t.push_back(seconds_option("tool-timeout", "seconds a tool call may run (default 10)", &settings::tool_timeout, 0.001));
    add_access_options(t);
    return t;
  }();
  return table;
}

const option* find_option(std::string_view name) {
  for (const auto& o : options())
    if (o.name == name) return &o;
  return nullptr;
}

using name_set = std::set<std::string, std::less<>>;

// The settings given as flags ("--name" or "--name=value").
name_set flagged_names(const std::vector<std::string>& args) {
  name_set flagged;
  for (const auto& a : args)
    if (a.starts_with("--")) flagged.insert(a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2));
  return flagged;
}

// Applies the variable of every setting not given as a flag (a flag ignores its
// variable entirely, even a bad one); the error, or "".
std::string apply_environment(settings& config, const name_set& flagged, const env_lookup& env) {
  for (const auto& o : options()) {
    if (flagged.contains(o.name)) continue;
    auto value = env(env_name(o.name));
    if (!value) continue;
    if (auto err = o.apply(config, *value); !err.empty()) return env_name(o.name) + "=" + *value + ": " + err;
  }
  return "";
}

// Takes a leading command word (serve, rebuild), moving `next` past it; the error, or "".
std::string take_command(const std::vector<std::string>& args, command_line& out, std::size_t& next) {
  if (args.empty() || args[0].starts_with("-")) return "";
  if (args[0] == "serve")
    out.cmd = command::serve;
  else if (args[0] == "rebuild")
    out.cmd = command::rebuild;
  else
    return "unknown command '" + args[0] + "' (commands: serve, rebuild)";
  next = 1;
  return "";
}

// Applies args[i]; a flag's value may be the next argument, and `i` then moves past
// it. The parse's result when it ends here (help, version, an error), else nullopt.
std::optional<parse_result> apply_argument(const std::vector<std::string>& args, std::size_t& i, command_line& out) {
  std::string_view arg = args[i];
  if (arg == "--help" || arg == "-h") {
    out.cmd = command::help;
    return parse_result{out, ""};
  }
  if (arg == "--version") {
    out.cmd = command::version;
    return parse_result{out, ""};
  }
  if (!arg.starts_with("--")) return parse_result{std::nullopt, "unexpected argument '" + std::string(arg) + "'"};
  arg.remove_prefix(2);
  std::string name(arg.substr(0, arg.find('=')));
  std::optional<std::string> value;
  if (auto eq = arg.find('='); eq != std::string_view::npos) value = std::string(arg.substr(eq + 1));

  if (out.cmd == command::rebuild && name == "all" && !value) {
    out.rebuild_all = true;
    return std::nullopt;
  }
  auto take_value = [&]() -> std::optional<std::string> {
    if (value) return value;
    if (i + 1 < args.size()) return args[++i];
    return std::nullopt;
  };
  if (out.cmd == command::rebuild && name == "session") {
    auto v = take_value();
    if (!v || v->empty()) return parse_result{std::nullopt, "--session needs a session id"};
    out.rebuild_session = *v;
    return std::nullopt;
  }
  const option* o = find_option(name);
  if (!o) return parse_result{std::nullopt, "unknown flag '--" + name + "' (see --help)"};
  auto v = take_value();
  if (!v) return parse_result{std::nullopt, "--" + name + " needs a value"};
  if (auto err = o->apply(out.config, *v); !err.empty()) return parse_result{std::nullopt, "--" + name + "=" + *v + ": " + err};
  return std::nullopt;
}

}  // namespace

parse_result parse_command_line(const std::vector<std::string>& args, const env_lookup& env) {
  command_line out;
  // Variables first, so that flags applied afterwards win.
  if (auto err = apply_environment(out.config, flagged_names(args), env); !err.empty()) return {std::nullopt, err};
  std::size_t i = 0;
  if (auto err = take_command(args, out, i); !err.empty()) return {std::nullopt, err};
  for (; i < args.size(); ++i)
    if (auto end = apply_argument(args, i, out)) return std::move(*end);
  if (out.cmd == command::rebuild && out.rebuild_all == out.rebuild_session.has_value())
    return {std::nullopt, "rebuild needs exactly one of --session ID or --all"};
  if (out.config.store == store_kind::postgres && out.config.pg_url.empty())
    return {std::nullopt, "--store=postgres needs --pg-url (GATEWAY_PG_URL)"};
  if (!out.config.redis_url.empty() && out.config.store != store_kind::postgres)
    return {std::nullopt, "--redis-url needs --store=postgres (the fan-out is between the nodes of one database)"};
  return {out, ""};
}

std::string usage_text() {
  std::ostringstream out;
  out << "usage: agent-gateway [serve] [flags]\n"
         "       agent-gateway rebuild (--session ID | --all) [flags]\n\n"
         "Every flag can also be set by its GATEWAY_* environment variable; a flag wins.\n\n";
  for (const auto& o : options()) {
    std::string flag = "--" + o.name;
    out << "  " << flag << std::string(flag.size() < 26 ? 26 - flag.size() : 1, ' ') << env_name(o.name) << "\n      " << o.help
        << "\n";
  }
  return out.str();
}

}  // namespace agw::core
