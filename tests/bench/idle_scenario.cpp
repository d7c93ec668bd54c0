// Scenario "idle": what an open but quiet subscription costs. N connections
// (default 10,000) GET /sessions/{id}/events without Last-Event-ID, spread
// round-robin over --sessions sessions (default 100, so 100 subscribers each);
// nothing runs, so each stream only writes a heartbeat every interval (the
// scenario starts the server with GATEWAY_SSE_HEARTBEAT_INTERVAL=1).
//
// Memory: server VmRSS with the sessions created and nothing open, after the
// first half is open, after all are open (each time after one heartbeat interval
// and a bit, so every stream has written a heartbeat). KiB per subscription over
// all N, and over the second half only (the marginal cost, without one-time
// growth such as the first channel's). Kernel socket buffers are not in RSS.
//
// CPU: --repeat windows of --seconds (default 10) of heartbeats: server CPU as %
// of one core and per heartbeat received; every stream must still be open at the
// end and have heard at least one heartbeat in the window.
//
// Teardown: at the end every client closes at once; the server CPU until its
// gateway_sse_streams_open gauge reads 0, per subscription (printed, not a row).
//
// File descriptors: the bench raises its RLIMIT_NOFILE soft limit to the hard
// limit before it forks the server, so the server (set before exec) has it too;
// both are printed. When not all N open, the number that did is reported.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/bench/scenario.hpp"
#include "tests/bench/sse_client.hpp"

namespace agw::bench {
namespace {

constexpr unsigned default_subscribers = 10000;
constexpr unsigned default_sessions = 100;
constexpr double default_window_s = 10.0;
constexpr std::size_t max_pending_connects = 256;

struct idle_setup {
  unsigned wanted = 0;
  unsigned sessions = 0;
  std::size_t opened = 0;  // got a 200 head
  std::size_t failed = 0;  // could not open (connect/status/EMFILE)
  std::string first_error;
  std::optional<double> rss_before_kib, rss_half_kib, rss_full_kib;
  std::size_t half = 0;                // connections open at the rss_half sample
  std::optional<double> streams_open;  // the server's gateway_sse_streams_open gauge with all open
  double open_s = 0;                   // time to open them all

  std::optional<double> kib_per_sub() const {
    if (!rss_before_kib || !rss_full_kib || opened == 0) return std::nullopt;
    return (*rss_full_kib - *rss_before_kib) / static_cast<double>(opened);
  }
  std::optional<double> kib_per_sub_marginal() const {
    if (!rss_half_kib || !rss_full_kib || opened <= half) return std::nullopt;
    return (*rss_full_kib - *rss_half_kib) / static_cast<double>(opened - half);
  }
};

struct idle_window {
  unsigned run = 0;
  double seconds = 0;
  std::uint64_t heartbeats = 0;
  double expected = 0;  // open streams x seconds / interval
  std::optional<double> server_cpu_s;
  double client_cpu_s = 0;
  std::size_t open_at_end = 0;
  std::size_t closed = 0;  // ended during the window
  std::size_t silent = 0;  // open, but no heartbeat in the window
  std::string first_error;

  std::optional<double> core_percent() const {
    if (!server_cpu_s || seconds <= 0) return std::nullopt;
    return *server_cpu_s / seconds * 100.0;
  }
  std::optional<double> us_per_heartbeat() const {
    if (!server_cpu_s || heartbeats == 0) return std::nullopt;
    return *server_cpu_s * 1e6 / static_cast<double>(heartbeats);
  }
  std::uint64_t errors() const { return closed + silent; }
};

struct idle_results {
  idle_setup setup;
  std::vector<idle_window> windows;
  double heartbeat_s = 0;
};

double heartbeat_interval(const bench_options& options) {
  auto it = options.server_env.find("GATEWAY_SSE_HEARTBEAT_INTERVAL");
  return it == options.server_env.end() ? 15.0 : std::atof(it->second.c_str());
}

std::optional<double> server_rss_kib(bench_target& target) {
  if (!target.server) return std::nullopt;
  auto v = proc_status_kib(target.server->pid(), "VmRSS");
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

void settle(sse_fleet& fleet, double seconds, const std::atomic<bool>* interrupted) {
  fleet.run_until([] { return false; },
                  fleet_clock::now() + std::chrono::duration_cast<fleet_clock::duration>(std::chrono::duration<double>(seconds)),
                  interrupted);
}

void print_tables(std::FILE* out, const idle_results& r) {
  const auto& s = r.setup;
  std::fprintf(out,
               "memory: server VmRSS with nothing open, after half, after all (each after a heartbeat interval); KiB/sub over\n"
               "all opened and over the second half only (marginal); kernel socket memory is not in RSS\n");
  std::fprintf(out, "%7s %8s %7s %6s %9s %10s %10s %10s %9s %13s %10s\n", "wanted", "sessions", "opened", "failed", "open_s",
               "rss0_MiB", "rss_half", "rss_all", "KiB/sub", "KiB/sub_2nd", "srv_open");
  auto mib = [](std::optional<double> kib) { return kib ? std::optional<double>(*kib / 1024.0) : std::nullopt; };
  std::fprintf(out, "%7u %8u %7zu %6zu %9.2f %10s %10s %10s %9s %13s %10s\n", s.wanted, s.sessions, s.opened, s.failed, s.open_s,
               format_optional(mib(s.rss_before_kib), "%.1f").c_str(), format_optional(mib(s.rss_half_kib), "%.1f").c_str(),
               format_optional(mib(s.rss_full_kib), "%.1f").c_str(), format_optional(s.kib_per_sub(), "%.2f").c_str(),
               format_optional(s.kib_per_sub_marginal(), "%.2f").c_str(), format_optional(s.streams_open, "%.0f").c_str());
  if (!s.first_error.empty()) std::fprintf(out, "first open error: %s\n", s.first_error.c_str());
  std::fprintf(out,
               "\nheartbeats (interval %.3g s): server CPU per window as %% of one core and us per heartbeat received; open =\n"
               "streams still open at the end; silent = open but no heartbeat in the window; closed = ended in the window\n",
               r.heartbeat_s);
  std::fprintf(out, "%-6s %8s %11s %11s %9s %8s %10s %8s %9s %7s %7s\n", "run", "window_s", "heartbeats", "expected", "srv_cpu",
               "%core", "us/hb", "cli_cpu", "open", "silent", "closed");
  std::vector<double> secs, hb, exp, cpu, core, per, cli, open, silent, closed;
  bool have_cpu = true;
  for (const auto& w : r.windows) {
    std::fprintf(out, "%-6u %8.2f %11llu %11.0f %9s %8s %10s %8.2f %9zu %7zu %7zu\n", w.run, w.seconds,
                 static_cast<unsigned long long>(w.heartbeats), w.expected, format_optional(w.server_cpu_s, "%.3f").c_str(),
                 format_optional(w.core_percent(), "%.2f").c_str(), format_optional(w.us_per_heartbeat(), "%.2f").c_str(),
                 w.client_cpu_s, w.open_at_end, w.silent, w.closed);
    secs.push_back(w.seconds);
    hb.push_back(static_cast<double>(w.heartbeats));
    exp.push_back(w.expected);
    cli.push_back(w.client_cpu_s);
    open.push_back(static_cast<double>(w.open_at_end));
    silent.push_back(static_cast<double>(w.silent));
    closed.push_back(static_cast<double>(w.closed));
    if (w.server_cpu_s && w.core_percent() && w.us_per_heartbeat()) {
      cpu.push_back(*w.server_cpu_s);
      core.push_back(*w.core_percent());
      per.push_back(*w.us_per_heartbeat());
    } else {
      have_cpu = false;
    }
  }
  if (!r.windows.empty()) {
    auto m = [have_cpu](const std::vector<double>& v) { return have_cpu ? std::optional<double>(median(v)) : std::nullopt; };
    std::fprintf(out, "%-6s %8.2f %11.0f %11.0f %9s %8s %10s %8.2f %9.0f %7.0f %7.0f\n", "median", median(secs), median(hb),
                 median(exp), format_optional(m(cpu), "%.3f").c_str(), format_optional(m(core), "%.2f").c_str(),
                 format_optional(m(per), "%.2f").c_str(), median(cli), median(open), median(silent), median(closed));
  }
  std::fprintf(out, "aim (issue): <= 5 KiB per idle subscription\n");
}

}  // namespace

std::string describe_idle_scenario(const bench_options& options) {
  const unsigned n = options.subscribers.empty() ? default_subscribers : options.subscribers.front();
  const unsigned sessions = std::min(n, options.sessions ? options.sessions : default_sessions);
  const double window = options.seconds_given ? options.seconds : default_window_s;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%u idle subscriptions over %u session(s), heartbeat windows of %.3g s", n, sessions, window);
  return buf;
}

// Every client closes at once: the server CPU until its stream gauge reads 0 (each
// stream noticing its peer left, leaving its session's subscribers, closing its socket).
// With --sessions 1 all of them leave one session's subscriber list.
void report_teardown(sse_fleet& fleet, bench_target& target, std::size_t opened) {
  const auto cpu_before = target.server_cpu_seconds();
  const auto start = fleet_clock::now();
  fleet.close_all();
  std::optional<double> open = metric_value(target.port, "gateway_sse_streams_open");
  while (open && *open > 0 && fleet_clock::now() - start < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    open = metric_value(target.port, "gateway_sse_streams_open");
  }
  const double took_s = std::chrono::duration<double>(fleet_clock::now() - start).count();
  const auto cpu_after = target.server_cpu_seconds();
  std::optional<double> cpu;
  if (cpu_before && cpu_after) cpu = *cpu_after - *cpu_before;
  std::optional<double> per_sub;
  if (cpu && opened > 0) per_sub = *cpu * 1e6 / static_cast<double>(opened);
  std::printf("  closing all %zu: the server's streams gauge read %s after %.2f s; server cpu %s s = %s us per subscription\n",
              opened, format_optional(open, "%.0f").c_str(), took_s, format_optional(cpu, "%.3f").c_str(),
              format_optional(per_sub, "%.1f").c_str());
  std::fflush(stdout);
}

void run_idle_scenario(const bench_options& options, bench_target& target, report& out) {
  auto results = std::make_shared<idle_results>();
  out.set_table([results](std::FILE* f) { print_tables(f, *results); });
  auto& setup = results->setup;
  setup.wanted = options.subscribers.empty() ? default_subscribers : options.subscribers.front();
  setup.sessions = std::min(setup.wanted, options.sessions ? options.sessions : default_sessions);
  results->heartbeat_s = heartbeat_interval(options);
  const double window = options.seconds_given ? options.seconds : default_window_s;
  const auto* interrupted = target.interrupted;
  if (options.subscribers.size() > 1) std::printf("note: idle takes one count; using --subscribers %u\n", setup.wanted);

  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  std::printf("open files limit: client (this process) soft %llu, hard %llu", static_cast<unsigned long long>(files.rlim_cur),
              static_cast<unsigned long long>(files.rlim_max));
  if (target.server) {
    if (auto l = proc_open_files_limit(target.server->pid()))
      std::printf("; server soft %ld (inherited: raised before exec)", *l);
  }
  std::printf("\n");
  if (files.rlim_cur < setup.wanted + 64)
    std::printf("warning: %u connections need more descriptors than the client's limit allows; the hard limit is %llu\n",
                setup.wanted, static_cast<unsigned long long>(files.rlim_max));

  std::vector<std::string> sessions;
  for (unsigned i = 0; i < setup.sessions; ++i)
    sessions.push_back(create_session(target.port, R"({"title":"bench idle )" + std::to_string(i) +
                                                       R"(","metadata":{"bench":"gateway_bench","scenario":"idle"}})"));
  const std::string host = "127.0.0.1:" + std::to_string(target.port);
  std::vector<std::string> requests;
  for (const auto& id : sessions)
    requests.push_back("GET /sessions/" + id + "/events HTTP/1.1\r\nHost: " + host + "\r\nAccept: text/event-stream\r\n\r\n");

  sse_fleet fleet(target.port, 64 * 1024);
  // One heartbeat interval and a bit: every stream has written its first heartbeat.
  const double settle_s = results->heartbeat_s + 0.5;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  setup.rss_before_kib = server_rss_kib(target);
  const auto open_start = fleet_clock::now();
  const unsigned half = setup.wanted / 2;
  auto make = [&](std::size_t i) { return requests[i % requests.size()]; };
  fleet.open_many(half, make, max_pending_connects, fleet_clock::now() + std::chrono::seconds(120), interrupted);
  const auto first_half_opened = fleet_clock::now();
  settle(fleet, settle_s, interrupted);
  for (const auto& c : fleet.conns()) setup.half += c.head_seen && !c.ended();
  setup.rss_half_kib = server_rss_kib(target);
  // The second half continues the round-robin where the first stopped.
  const auto second_half_start = fleet_clock::now();
  fleet.open_many(
      setup.wanted - half, [&](std::size_t i) { return requests[(half + i) % requests.size()]; }, max_pending_connects,
      fleet_clock::now() + std::chrono::seconds(120), interrupted);
  setup.open_s =
      std::chrono::duration<double>((first_half_opened - open_start) + (fleet_clock::now() - second_half_start)).count();
  settle(fleet, settle_s, interrupted);
  setup.rss_full_kib = server_rss_kib(target);
  setup.streams_open = metric_value(target.port, "gateway_sse_streams_open");
  target.check_alive();
  for (const auto& c : fleet.conns()) {
    if (c.head_seen && !c.ended()) ++setup.opened;
    if (!c.head_seen) {
      ++setup.failed;
      if (setup.first_error.empty()) setup.first_error = c.error.empty() ? "no response head" : c.error;
    }
  }
  std::printf(
      "  opened %zu of %u idle subscriptions over %u sessions in %.2f s (%zu failed); server RSS %s -> %s -> %s MiB: "
      "%s KiB per subscription (second half: %s KiB); the server counts %s open SSE streams\n",
      setup.opened, setup.wanted, setup.sessions, setup.open_s, setup.failed,
      format_optional(setup.rss_before_kib ? std::optional<double>(*setup.rss_before_kib / 1024) : std::nullopt, "%.1f").c_str(),
      format_optional(setup.rss_half_kib ? std::optional<double>(*setup.rss_half_kib / 1024) : std::nullopt, "%.1f").c_str(),
      format_optional(setup.rss_full_kib ? std::optional<double>(*setup.rss_full_kib / 1024) : std::nullopt, "%.1f").c_str(),
      format_optional(setup.kib_per_sub(), "%.2f").c_str(), format_optional(setup.kib_per_sub_marginal(), "%.2f").c_str(),
      format_optional(setup.streams_open, "%.0f").c_str());
  if (!setup.first_error.empty()) std::printf("    first error: %s\n", setup.first_error.c_str());
  std::fflush(stdout);

  measurement open_row;
  open_row.operation = "idle-open";
  open_row.connections = setup.wanted;
  open_row.run = 1;
  open_row.requests = setup.wanted;
  open_row.errors = setup.failed;
  open_row.first_error = setup.first_error;
  out.add_quietly(open_row);

  for (unsigned run = 1; run <= options.repeat; ++run) {
    if (interrupted && interrupted->load()) break;
    idle_window w;
    w.run = run;
    fleet.reset_window();
    const std::size_t ended_before = fleet.ended_count();
    const std::size_t open_before = fleet.size() - ended_before;
    const auto cpu_before = target.server_cpu_seconds();
    const double client_before = process_cpu_seconds();
    const auto start = fleet_clock::now();
    settle(fleet, window, interrupted);
    const auto cpu_after = target.server_cpu_seconds();
    const double client_after = process_cpu_seconds();
    w.seconds = std::chrono::duration<double>(fleet_clock::now() - start).count();
    target.check_alive();
    if (cpu_before && cpu_after) w.server_cpu_s = *cpu_after - *cpu_before;
    w.client_cpu_s = client_after - client_before;
    w.heartbeats = fleet.window_heartbeats();
    w.expected = static_cast<double>(open_before) * w.seconds / results->heartbeat_s;
    w.closed = fleet.ended_count() - ended_before;
    for (const auto& c : fleet.conns()) {
      if (c.ended()) {
        if (w.first_error.empty() && c.head_seen && !c.error.empty()) w.first_error = c.error;
        continue;
      }
      ++w.open_at_end;
      if (c.heartbeats == 0) ++w.silent;
    }
    std::printf(
        "  window %u: %.2f s, %llu heartbeats (expected ~%.0f), server cpu %s s = %s%% of one core = %s us per heartbeat, "
        "client cpu %.2f s, %zu open at the end, %zu silent, %zu closed\n",
        run, w.seconds, static_cast<unsigned long long>(w.heartbeats), w.expected,
        format_optional(w.server_cpu_s, "%.3f").c_str(), format_optional(w.core_percent(), "%.2f").c_str(),
        format_optional(w.us_per_heartbeat(), "%.2f").c_str(), w.client_cpu_s, w.open_at_end, w.silent, w.closed);
    if (!w.first_error.empty()) std::printf("    first error: %s\n", w.first_error.c_str());
    std::fflush(stdout);
    measurement m;
    m.operation = "idle";
    m.connections = setup.wanted;
    m.run = run;
    m.requests = open_before;
    m.errors = w.errors();
    m.elapsed_s = w.seconds;
    m.server_cpu_s = w.server_cpu_s;
    m.client_cpu_s = w.client_cpu_s;
    m.first_error = w.first_error;
    out.add_quietly(m);
    results->windows.push_back(w);
  }
  report_teardown(fleet, target, setup.opened);
}

}  // namespace agw::bench
