// gateway_bench: load figures for the real agent-gateway binary over loopback.
// It prints numbers, not verdicts, so it is built with the project but never run
// by ctest; it fails (non-zero exit) only when it could not measure: the server
// did not start or died, or more than 1 % of requests failed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/bench/scenario.hpp"
#include "tests/bench/server_process.hpp"

#ifndef GATEWAY_BINARY
#error "GATEWAY_BINARY must name the agent-gateway executable"
#endif

namespace agw::bench {
namespace {

constexpr int exit_usage = 2;
constexpr int exit_server_failed = 3;
constexpr int exit_too_many_errors = 4;
constexpr int exit_interrupted = 130;
constexpr double max_error_ratio = 0.01;

std::atomic<bool> interrupted{false};

extern "C" void on_interrupt(int) { interrupted.store(true); }

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void print_help(std::FILE* out) {
  std::fprintf(out,
               "usage: gateway_bench [options]\n"
               "\n"
               "Measures the agent-gateway over HTTP/1.1 keep-alive connections to 127.0.0.1.\n"
               "By default it starts the server itself (GATEWAY_PORT=0, a temporary database,\n"
               "GATEWAY_LOG_LEVEL=warn, GATEWAY_SSE_HEARTBEAT_INTERVAL=15; --server-env wins),\n"
               "reads the port from its stdout, reports the server's CPU time per measurement\n"
               "and its peak RSS, and stops it by PID (SIGTERM, then SIGKILL after 10 s).\n"
               "\n"
               "options:\n"
               "  --scenario NAME        scenario to run (default: sessions)\n"
               "  --connections LIST     comma-separated connection counts, at most 1000\n"
               "                         (default: 1,64; streams: 100,1000)\n"
               "  --seconds S            duration of each measurement (default: 5, max 60); sustained: the\n"
               "                         least the pass lasts (default: 30)\n"
               "  --requests N           end each measurement after N requests instead\n"
               "                         (still capped at 60 s); resume: resumes per case and run (default: 1000)\n"
               "  --repeat R             runs per measurement; the median is reported (default: 3)\n"
               "  --warmup S             untimed warm-up per connection count (default: 0.5; 0 = none;\n"
               "                         streams: one untimed run of up to 100 streams unless 0)\n"
               "  --client-threads N     client io threads, 1 or 2 (default: 1)\n"
               "  --timeout-ms MS        per-request timeout, counted as an error (default: 5000)\n"
               "  --binary PATH          server to start (default: %s)\n"
               "  --server-env KEY=VAL   extra environment for the started server (repeatable),\n"
               "                         e.g. --server-env GATEWAY_IO_THREADS=1\n"
               "  --tokens K             streams: tokens per run, config.mock.tokens (default: 200);\n"
               "                         fanout, frontends: tokens of the measured run (default: 20000);\n"
               "                         sustained: 20\n"
               "  --rates LIST           streams: comma-separated token rates per stream, 'max' (no\n"
               "                         tokens_per_second) or tokens/s (default: max,20)\n"
               "  --subscribers LIST     fanout: comma-separated subscriber counts (default: 1,100,1000);\n"
               "                         idle: the number of idle subscriptions (default: 10000);\n"
               "                         frontends: streams per run (default: 100)\n"
               "  --sessions N           idle: sessions the subscriptions are spread over (default: 100);\n"
               "                         sustained: sessions that run (default: 4)\n"
               "  --session-events E     resume: events in the resumed session (default: 5000)\n"
               "  --runs N               sustained: runs per session (default: 1000)\n"
               "  --port N               drive a server already listening on 127.0.0.1:N instead\n"
               "                         (no CPU or RSS figures then)\n"
               "  --help                 this text\n"
               "\n"
               "scenarios:\n",
               GATEWAY_BINARY);
  for (const auto& s : scenarios())
    std::fprintf(out, "  %-22.*s %.*s\n", static_cast<int>(s.name.size()), s.name.data(), static_cast<int>(s.summary.size()),
                 s.summary.data());
  std::fprintf(out,
               "\n"
               "figures per (operation, connections): requests/s (2xx answers per second), p50 and\n"
               "p99 latency in microseconds (2xx only, send to full answer), errors (non-2xx or\n"
               "I/O error), server CPU seconds (utime+stime) and server CPU per request; each\n"
               "run's figure and the median of the runs. Defaults take about 70 s.\n"
               "streams: per (rate, connections) delivered events/s (all frames / first POST to\n"
               "last done), time to first token p50/p99, for a set rate the drift of each token\n"
               "from its schedule p50/p99 (token i is due i/R after the first; drift = its lateness\n"
               "against the stream's best-delivered token, so a constant pipeline latency is not\n"
               "counted; the per-run line also gives p99 against a first-token anchor) and the\n"
               "inter-token gap p99, server\n"
               "CPU and CPU us per event (= CPU s per million events), server peak RSS (VmHWM,\n"
               "reset before each run), client CPU, and how long the server's and the client's\n"
               "threads sat runnable without a CPU (rqwait: the machine's share of the latencies).\n"
               "Errors are streams that were not 200, had no done, an error event, ids that were\n"
               "not consecutive, or not K tokens. Defaults take about 2 minutes; a rate-limited\n"
               "run lasts at least K/R s (--repeat 1 shortens it).\n"
               "fanout: per S, S subscribers (GET /sessions/{id}/events, no Last-Event-ID) of one session\n"
               "are connected and confirmed by a 10-token warm-up run whose done they all got, then one\n"
               "max-speed run of --tokens K (default 20000) is POSTed; deliveries/s = events x S / (POST to\n"
               "the last subscriber's done); server CPU per delivery and per million deliveries; client CPU\n"
               "and its share of the wall time; errors = subscribers that missed any event or the done.\n"
               "Server started with GATEWAY_SSE_HEARTBEAT_INTERVAL=2 (closed streams end quickly).\n"
               "idle: --subscribers idle GET /events streams over --sessions sessions, heartbeat 1 s\n"
               "(GATEWAY_SSE_HEARTBEAT_INTERVAL=1 unless --server-env says otherwise): server RSS before\n"
               "and after opening them (KiB per subscription), then --repeat windows of --seconds (default\n"
               "10) of idle heartbeats: server CPU (%% of one core, us per heartbeat), every stream still\n"
               "open and heard from.\n"
               "resume: a session of --session-events events; --requests (default 1000) resumes per case,\n"
               "one at a time: connect + GET /events with Last-Event-ID N until the first replayed frame\n"
               "(after `reconnected`), then close. Cases: ring (N within the last 100, another subscriber\n"
               "keeps the ring), log (N below last-200), log-recent (N within the last 100 with no other\n"
               "subscriber: the idle session released its ring). p50/p99 per run, median of --repeat runs.\n"
               "sustained: --sessions sessions (default 4) with config.mock.tokens --tokens (default 20), each on\n"
               "one keep-alive connection, run message after message (max speed) in rounds: every session once,\n"
               "then the next round, until --runs rounds (default 1000) and at least --seconds (default 30); one\n"
               "pass, --repeat is ignored. Per window of the last clamp(N/2, 1, 20) rounds up to N = 1, 10, 100,\n"
               "1000 runs per session (powers of ten up to --runs), --runs and the last round: events/s, server\n"
               "CPU (threads' schedstat) us per event and ms per run, KiB written to storage per run (/proc/PID/io\n"
               "write_bytes of the server), db + wal MiB at N and bytes per event so far, run latency p50/p99.\n"
               "\n"
               "exit status: 0 ok; %d bad arguments; %d the server failed to start or died;\n"
               "%d more than 1%% of requests failed; %d interrupted; 1 other failure.\n",
               exit_usage, exit_server_failed, exit_too_many_errors, exit_interrupted);
}

std::uint64_t parse_unsigned(const std::string& flag, const std::string& text, std::uint64_t lo, std::uint64_t hi) {
  std::size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || text.front() == '-' || v < lo || v > hi)
    throw usage_error(flag + " wants an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + text + "'");
  return v;
}

double parse_seconds(const std::string& flag, const std::string& text, double lo, double hi) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(v >= lo && v <= hi))
    throw usage_error(flag + " wants a number of seconds in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" +
                      text + "'");
  return v;
}

bench_options parse_options(int argc, char** argv, bool& help) {
  bench_options o;
  o.binary = GATEWAY_BINARY;
  help = false;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    std::string value;
    // Both "--flag value" and "--flag=value".
    if (auto eq = flag.find('='); flag.starts_with("--") && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (flag != "--help" && flag != "-h") {
      if (i + 1 >= argc) throw usage_error(flag + " needs a value");
      value = argv[++i];
    }
    if (flag == "--help" || flag == "-h") {
      help = true;
    } else if (flag == "--scenario") {
      if (!find_scenario(value)) throw usage_error("unknown scenario '" + value + "' (see --help)");
      o.scenario = value;
    } else if (flag == "--connections") {
      o.connections.clear();
      o.connections_given = true;
      std::stringstream list(value);
      for (std::string item; std::getline(list, item, ',');)
        o.connections.push_back(static_cast<unsigned>(parse_unsigned("--connections", item, 1, 1000)));
      if (o.connections.empty()) throw usage_error("--connections needs at least one count");
    } else if (flag == "--seconds") {
      o.seconds = parse_seconds(flag, value, 0.1, 60);
      o.seconds_given = true;
    } else if (flag == "--requests") {
      o.requests = parse_unsigned(flag, value, 1, std::numeric_limits<std::uint32_t>::max());
    } else if (flag == "--repeat") {
      o.repeat = static_cast<unsigned>(parse_unsigned(flag, value, 1, 20));
    } else if (flag == "--warmup") {
      o.warmup_seconds = parse_seconds(flag, value, 0, 10);
    } else if (flag == "--client-threads") {
      o.client_threads = static_cast<unsigned>(parse_unsigned(flag, value, 1, 2));
    } else if (flag == "--timeout-ms") {
      o.request_timeout = std::chrono::milliseconds(parse_unsigned(flag, value, 10, 60000));
    } else if (flag == "--binary") {
      o.binary = value;
    } else if (flag == "--server-env") {
      auto eq = value.find('=');
      if (eq == std::string::npos || eq == 0) throw usage_error("--server-env wants KEY=VALUE, got '" + value + "'");
      o.server_env[value.substr(0, eq)] = value.substr(eq + 1);
    } else if (flag == "--tokens") {
      o.tokens = static_cast<unsigned>(parse_unsigned(flag, value, 1, 1000000));
      o.tokens_given = true;
    } else if (flag == "--rates") {
      o.rates.clear();
      std::stringstream list(value);
      for (std::string item; std::getline(list, item, ',');)
        o.rates.push_back(item == "max" ? 0.0 : parse_seconds("--rates (tokens/s, or max)", item, 0.1, 100000));
      if (o.rates.empty()) throw usage_error("--rates needs at least one rate");
    } else if (flag == "--subscribers") {
      o.subscribers.clear();
      std::stringstream list(value);
      for (std::string item; std::getline(list, item, ',');)
        o.subscribers.push_back(static_cast<unsigned>(parse_unsigned("--subscribers", item, 1, 100000)));
      if (o.subscribers.empty()) throw usage_error("--subscribers needs at least one count");
    } else if (flag == "--sessions") {
      o.sessions = static_cast<unsigned>(parse_unsigned(flag, value, 1, 100000));
    } else if (flag == "--runs") {
      o.runs = static_cast<unsigned>(parse_unsigned(flag, value, 1, 1000000));
    } else if (flag == "--session-events") {
      o.session_events = static_cast<unsigned>(parse_unsigned(flag, value, 300, 1000000));
    } else if (flag == "--port") {
      o.port = static_cast<std::uint16_t>(parse_unsigned(flag, value, 1, 65535));
    } else {
      throw usage_error("unknown option '" + flag + "' (see --help)");
    }
  }
  // What the scenario needs from the server, unless --server-env said otherwise.
  if (const scenario* s = find_scenario(o.scenario); s && !s->server_env_defaults.empty()) {
    std::stringstream list{std::string(s->server_env_defaults)};
    for (std::string item; std::getline(list, item, ',');)
      if (auto eq = item.find('='); eq != std::string::npos) o.server_env.emplace(item.substr(0, eq), item.substr(eq + 1));
  }
  if (!o.connections_given) {
    const scenario* s = find_scenario(o.scenario);
    if (s && !s->default_connections.empty()) {
      o.connections.clear();
      std::stringstream list{std::string(s->default_connections)};
      for (std::string item; std::getline(list, item, ',');) o.connections.push_back(static_cast<unsigned>(std::stoul(item)));
    }
  }
  return o;
}

// Every stream is a socket on both sides: 1000 of them pass the usual soft limit
// of 1024. The started server inherits the raised limit too.
void raise_open_files_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= r.rlim_max) return;
  const auto before = r.rlim_cur;
  r.rlim_cur = r.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &r) != 0)
    std::fprintf(stderr, "gateway_bench: could not raise RLIMIT_NOFILE from %llu\n", static_cast<unsigned long long>(before));
}

void install_signal_handlers() {
  // First Ctrl-C: finish the in-flight requests, print what was measured, stop the
  // server. SA_RESETHAND makes a second one kill the bench (the server follows
  // through PR_SET_PDEATHSIG).
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sa.sa_flags = SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // A server closing a socket under a write must be an error code, not our death.
  signal(SIGPIPE, SIG_IGN);
}

// With --port nobody else tells us the server is missing: one connect up front
// turns "every request failed" into a clear start-up error.
bool loopback_port_accepts(std::uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

void print_server_log_tail(const server_process& server) {
  std::string log = server.stderr_text();
  if (log.empty()) return;
  std::vector<std::string> lines;
  std::stringstream in(log);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::printf("server logged %zu line(s) at warn or above; the last ones:\n", lines.size());
  for (std::size_t i = lines.size() > 5 ? lines.size() - 5 : 0; i < lines.size(); ++i) std::printf("  %s\n", lines[i].c_str());
}

int run(int argc, char** argv) {
  bool help = false;
  bench_options options;
  try {
    options = parse_options(argc, argv, help);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "gateway_bench: %s\n", e.what());
    return exit_usage;
  }
  if (help) {
    print_help(stdout);
    return 0;
  }
  const scenario* chosen = find_scenario(options.scenario);
  install_signal_handlers();
  raise_open_files_limit();

  std::unique_ptr<server_process> server;
  bench_target target;
  target.interrupted = &interrupted;
  if (options.port) {
    target.port = *options.port;
    if (!loopback_port_accepts(target.port)) {
      std::fprintf(stderr, "gateway_bench: nothing accepts connections on 127.0.0.1:%u\n", target.port);
      return exit_server_failed;
    }
    std::printf("driving the server on 127.0.0.1:%u (not started by the bench: no CPU/RSS figures)\n", target.port);
  } else {
    try {
      server = std::make_unique<server_process>(options.binary, options.server_env);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gateway_bench: the server failed to start: %s\n", e.what());
      return exit_server_failed;
    }
    target.port = server->port();
    target.server = server.get();
    std::printf("started %s: pid %d, 127.0.0.1:%u\n", options.binary.c_str(), static_cast<int>(server->pid()), target.port);
  }

  std::string per_measurement = chosen->describe   ? chosen->describe(options)
                                : options.requests ? std::to_string(options.requests) + " requests (max 60 s)"
                                                   : std::to_string(options.seconds).substr(0, 4) + " s";
  if (chosen->uses_connections) {
    std::printf("scenario %.*s: %s per measurement, %u run(s), %u client thread(s), connections",
                static_cast<int>(chosen->name.size()), chosen->name.data(), per_measurement.c_str(), options.repeat,
                options.client_threads);
    for (auto c : options.connections) std::printf(" %u", c);
  } else if (chosen->uses_repeat) {
    std::printf("scenario %.*s: %s, %u run(s)", static_cast<int>(chosen->name.size()), chosen->name.data(),
                per_measurement.c_str(), options.repeat);
  } else {
    std::printf("scenario %.*s: %s", static_cast<int>(chosen->name.size()), chosen->name.data(), per_measurement.c_str());
  }
  if (!options.server_env.empty() && server) {
    std::printf("; server environment:");
    for (const auto& [k, v] : options.server_env) std::printf(" %s=%s", k.c_str(), v.c_str());
  }
  std::printf("\n");
  std::fflush(stdout);

  report out(stdout);
  int code = 0;
  try {
    chosen->run(options, target, out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gateway_bench: %s\n", e.what());
    code = (server && !server->running()) ? exit_server_failed : 1;
  }

  out.print_summary(std::string(chosen->name) + ": each run, then the median of the runs");
  if (server) {
    if (auto rss = server->peak_rss_kib())
      std::printf("server peak RSS (VmHWM): %ld KiB (%.1f MiB)\n", *rss, static_cast<double>(*rss) / 1024.0);
    print_server_log_tail(*server);
    int status = server->stop(std::chrono::seconds(10));
    std::printf("server stopped (pid %d), exit status %d\n", static_cast<int>(server->pid()), status);
  }

  const auto total = out.total_requests();
  const auto errors = out.total_errors();
  const double ratio = total ? static_cast<double>(errors) / static_cast<double>(total) : 0.0;
  std::printf("requests: %llu, errors: %llu (%.3f%%)\n", static_cast<unsigned long long>(total),
              static_cast<unsigned long long>(errors), ratio * 100.0);
  if (code == 0 && ratio > max_error_ratio) {
    std::fprintf(stderr, "gateway_bench: %.3f%% of requests failed (limit 1%%)\n", ratio * 100.0);
    code = exit_too_many_errors;
  }
  if (code == 0 && interrupted.load()) code = exit_interrupted;
  if (code == 0 && total == 0) {
    std::fprintf(stderr, "gateway_bench: no request was measured\n");
    code = 1;
  }
  return code;
}

}  // namespace
}  // namespace agw::bench

int main(int argc, char** argv) {
  try {
    return agw::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gateway_bench: %s\n", e.what());
    return 1;
  }
}
