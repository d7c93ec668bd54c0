// Scenario "sustained": long conversations. The same S sessions (--sessions,
// default 4) run message after message, each on its own keep-alive connection:
// POST /sessions/{id}/messages with {"mock":{"tokens":K}} (--tokens, default 20,
// as fast as the server goes) and read the SSE answer to its done. In rounds:
// every session runs once, the next round starts when all have, so after round
// N every session has run exactly N times. It goes on until --runs rounds
// (default 1,000 runs per session) are done and at least --seconds (default 30)
// have passed.
//
// Figures per window of rounds ending at 1, 10, 100, 1,000 (every power of ten up
// to --runs), --runs and the last round: the window is the last clamp(N/2, 1, 20)
// rounds up to N, so it shows what a run costs once a session has had about N.
// events/s; server CPU (its threads' schedstat, to the ns) per event and per run;
// bytes written per run (/proc/PID/io write_bytes of the server: every thread's
// storage writes, counted as pages are dirtied: WAL appends and the WAL
// checkpointer's copies into the database); the database's size (db + -wal files)
// at the window's end, and per event so far (flat when the database grows
// linearly with events); run latency p50/p99 (POST sent → done read).
//
// Defaults: 4 sessions x 20 tokens keep a round short (a few ms) so 1,000 runs
// per session take well under a minute on the 2-core machine when a run's cost
// stays flat; a gateway whose per-run cost grows with the conversation shows it
// here and takes longer.
#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "tests/bench/latency_recorder.hpp"
#include "tests/bench/run_connection.hpp"
#include "tests/bench/scenario.hpp"
#include "tests/bench/sse_client.hpp"

namespace agw::bench {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

constexpr unsigned default_sessions = 4;
constexpr unsigned default_tokens = 20;
constexpr unsigned default_runs = 1000;
constexpr double default_min_seconds = 30.0;
constexpr unsigned max_window_rounds = 20;
// A round that takes longer has a stuck stream: its runs fail, the next round goes on.
constexpr std::chrono::seconds round_timeout{60};
constexpr double progress_every_s = 10.0;
constexpr std::string_view message_body = R"({"content":"bench"})";

struct sustained_plan {
  unsigned sessions = default_sessions;
  unsigned tokens = default_tokens;
  unsigned runs = default_runs;
  double min_seconds = default_min_seconds;
};

sustained_plan plan_of(const bench_options& options) {
  sustained_plan p;
  if (options.sessions) p.sessions = options.sessions;
  if (options.tokens_given) p.tokens = options.tokens;
  if (options.runs) p.runs = options.runs;
  if (options.seconds_given) p.min_seconds = options.seconds;
  return p;
}

// The server's counters after a round (round 0: before the first).
struct sample {
  unsigned round = 0;
  clock_type::time_point at{};
  std::uint64_t events = 0;  // received by the client so far
  std::uint64_t failed_runs = 0;
  std::optional<double> cpu_s;
  std::optional<std::uint64_t> written;   // /proc/PID/io write_bytes
  std::optional<std::uint64_t> db_bytes;  // db + wal
};

std::optional<std::uint64_t> database_bytes(const std::filesystem::path& db) {
  std::error_code ec;
  const auto db_size = std::filesystem::file_size(db, ec);
  if (ec) return std::nullopt;
  const auto wal_size = std::filesystem::file_size(db.string() + "-wal", ec);
  return db_size + (ec ? 0 : wal_size);
}

sample take_sample(const bench_target& target, unsigned round, std::uint64_t events, std::uint64_t failed_runs) {
  sample s;
  s.round = round;
  s.at = clock_type::now();
  s.events = events;
  s.failed_runs = failed_runs;
  if (target.server) {
    s.cpu_s = target.server->cpu_seconds_precise();
    s.written = target.server->storage_write_bytes();
    s.db_bytes = database_bytes(target.server->database_path());
  }
  return s;
}

// One window's figures: the rounds first..last (the checkpoint N = last).
struct window {
  unsigned first = 0, last = 0;
  unsigned runs = 0;  // rounds x sessions
  std::uint64_t events = 0, failed_runs = 0, events_so_far = 0;
  double wall_s = 0;
  std::optional<double> cpu_s;
  std::optional<std::uint64_t> written, db_bytes;
  double run_p50_ms = 0, run_p99_ms = 0;

  double events_per_s() const { return wall_s > 0 ? static_cast<double>(events) / wall_s : 0.0; }
  std::optional<double> cpu_us_per_event() const {
    if (!cpu_s || events == 0) return std::nullopt;
    return *cpu_s * 1e6 / static_cast<double>(events);
  }
  std::optional<double> cpu_ms_per_run() const {
    if (!cpu_s || runs == 0) return std::nullopt;
    return *cpu_s * 1e3 / runs;
  }
  std::optional<double> kib_written_per_run() const {
    if (!written || runs == 0) return std::nullopt;
    return static_cast<double>(*written) / 1024.0 / runs;
  }
  std::optional<double> db_mib() const {
    if (!db_bytes) return std::nullopt;
    return static_cast<double>(*db_bytes) / (1024.0 * 1024.0);
  }
  std::optional<double> db_bytes_per_event() const {
    if (!db_bytes || events_so_far == 0) return std::nullopt;
    return static_cast<double>(*db_bytes) / static_cast<double>(events_so_far);
  }
};

// What one pass measured: a sample after every round, every run's latency by round.
struct sustained_result {
  sustained_plan plan;
  std::vector<sample> samples;              // samples[r]: after round r
  std::vector<std::vector<double>> run_ms;  // run_ms[r - 1]: round r's runs
  std::string first_error;
  bool interrupted = false;

  unsigned rounds() const { return samples.empty() ? 0 : samples.back().round; }
};

window window_ending_at(const sustained_result& r, unsigned n) {
  window w;
  w.last = n;
  w.first = n - std::clamp(n / 2, 1u, max_window_rounds) + 1;
  const sample& a = r.samples[w.first - 1];
  const sample& b = r.samples[n];
  w.runs = (n - w.first + 1) * r.plan.sessions;
  w.events = b.events - a.events;
  w.events_so_far = b.events;
  w.failed_runs = b.failed_runs - a.failed_runs;
  w.wall_s = std::chrono::duration<double>(b.at - a.at).count();
  if (a.cpu_s && b.cpu_s) w.cpu_s = *b.cpu_s - *a.cpu_s;
  if (a.written && b.written) w.written = *b.written - std::min(*a.written, *b.written);
  w.db_bytes = b.db_bytes;
  latency_recorder runs;
  for (unsigned round = w.first; round <= n; ++round)
    for (double ms : r.run_ms[round - 1]) runs.record(std::chrono::nanoseconds(static_cast<std::int64_t>(ms * 1e6)));
  w.run_p50_ms = runs.percentile_us(50) / 1000.0;
  w.run_p99_ms = runs.percentile_us(99) / 1000.0;
  return w;
}

// 1, 10, 100, ... up to --runs, then --runs and the last round (when reached).
std::vector<unsigned> checkpoints(const sustained_result& r) {
  std::vector<unsigned> out;
  for (unsigned n = 1; n <= r.plan.runs && n <= r.rounds(); n *= 10) out.push_back(n);
  for (unsigned n : {r.plan.runs, r.rounds()})
    if (n >= 1 && n <= r.rounds() && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  return out;
}

void print_window(std::FILE* out, const window& w) {
  std::fprintf(out, "%9u %9s %9.0f %10s %10s %12s %10s %10s %9.2f %9.2f %7llu\n", w.last,
               (std::to_string(w.first) + "-" + std::to_string(w.last)).c_str(), w.events_per_s(),
               format_optional(w.cpu_us_per_event(), "%.2f").c_str(), format_optional(w.cpu_ms_per_run(), "%.3f").c_str(),
               format_optional(w.kib_written_per_run(), "%.1f").c_str(), format_optional(w.db_mib(), "%.1f").c_str(),
               format_optional(w.db_bytes_per_event(), "%.0f").c_str(), w.run_p50_ms, w.run_p99_ms,
               static_cast<unsigned long long>(w.failed_runs));
}

void print_table(std::FILE* out, const sustained_result& r) {
  const auto& p = r.plan;
  std::fprintf(out,
               "%u sessions x %u tokens per run, %u rounds (runs per session) in %.1f s. Per window of rounds up to N:\n"
               "events/s; server CPU us per event and ms per run; KiB the server wrote to storage per run (/proc/PID/io\n"
               "write_bytes); db + wal MiB at N and bytes per event so far; run latency (POST to done) p50/p99 ms\n",
               p.sessions, p.tokens, r.rounds(),
               r.samples.size() > 1 ? std::chrono::duration<double>(r.samples.back().at - r.samples.front().at).count() : 0.0);
  std::fprintf(out, "%9s %9s %9s %10s %10s %12s %10s %10s %9s %9s %7s\n", "runs/sess", "rounds", "events/s", "srv_us/ev",
               "srv_ms/run", "KiB_wr/run", "db_MiB", "db_B/ev", "run_p50", "run_p99", "failed");
  for (unsigned n : checkpoints(r)) print_window(out, window_ending_at(r, n));
  if (!r.first_error.empty()) std::fprintf(out, "first failed run: %s\n", r.first_error.c_str());
}

std::vector<std::string> create_sessions(const bench_target& target, const sustained_plan& p) {
  const std::string body = R"({"title":"bench sustained","metadata":{"bench":"gateway_bench","scenario":"sustained"},)"
                           R"("config":{"mock":{"tokens":)" +
                           std::to_string(p.tokens) + "}}}";
  std::vector<std::string> ids;
  for (unsigned i = 0; i < p.sessions; ++i) ids.push_back(create_session(target.port, body));
  return ids;
}

// Every connection runs one message; returns when all have finished (or failed).
void run_round(net::io_context& io, std::vector<std::unique_ptr<run_connection>>& conns) {
  io.restart();
  std::size_t remaining = conns.size();
  net::steady_timer watchdog(io, round_timeout);
  watchdog.async_wait([&](const boost::system::error_code& ec) {
    if (!ec)
      for (auto& c : conns) c->abandon("timed out");
  });
  for (auto& c : conns)
    c->start([&] {
      if (--remaining == 0) watchdog.cancel();
    });
  io.run();
}

// After a round: counts what its runs delivered and how long each took.
void note_round(const std::vector<std::unique_ptr<run_connection>>& conns, sustained_result& out, std::uint64_t& events,
                std::uint64_t& failed) {
  auto& times = out.run_ms.emplace_back();
  for (const auto& c : conns) {
    events += c->result().events;
    if (c->failed()) {
      ++failed;
      if (out.first_error.empty()) out.first_error = c->result().error.empty() ? "no done" : c->result().error;
    } else {
      times.push_back(c->seconds() * 1e3);
    }
  }
}

void print_progress(const sustained_result& r, unsigned round) {
  const auto w = window_ending_at(r, round);
  std::printf("  round %u: %.0f events/s, server %s us/event, %s ms/run, %s KiB written/run, db %s MiB, run p50 %.2f ms\n", round,
              w.events_per_s(), format_optional(w.cpu_us_per_event(), "%.2f").c_str(),
              format_optional(w.cpu_ms_per_run(), "%.3f").c_str(), format_optional(w.kib_written_per_run(), "%.1f").c_str(),
              format_optional(w.db_mib(), "%.1f").c_str(), w.run_p50_ms);
  std::fflush(stdout);
}

void run_pass(bench_target& target, sustained_result& out) {
  const auto& p = out.plan;
  const auto ids = create_sessions(target, p);
  net::io_context io(1);
  const tcp::endpoint endpoint(net::ip::address_v4::loopback(), target.port);
  std::vector<std::unique_ptr<run_connection>> conns;
  for (const auto& id : ids)
    conns.push_back(std::make_unique<run_connection>(io, endpoint, id, std::string(message_body), p.tokens));

  std::uint64_t events = 0, failed = 0;
  out.samples.push_back(take_sample(target, 0, 0, 0));
  const auto start = out.samples.front().at;
  auto next_progress = start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(progress_every_s));
  for (unsigned round = 1;; ++round) {
    if (target.interrupted && target.interrupted->load()) {
      out.interrupted = true;
      return;
    }
    run_round(io, conns);
    note_round(conns, out, events, failed);
    out.samples.push_back(take_sample(target, round, events, failed));
    target.check_alive();
    const auto now = out.samples.back().at;
    const bool checkpoint = round == 1 || round == 10 || round == 100 || round == 1000 || round == 10000 || round == p.runs;
    if (checkpoint || now >= next_progress) {
      print_progress(out, round);
      next_progress = now + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(progress_every_s));
    }
    if (round >= p.runs && std::chrono::duration<double>(now - start).count() >= p.min_seconds) return;
  }
}

}  // namespace

std::string describe_sustained_scenario(const bench_options& options) {
  const auto p = plan_of(options);
  char buf[200];
  std::snprintf(buf, sizeof buf, "%u sessions x %u tokens, %u runs per session and at least %g s (one pass)", p.sessions,
                p.tokens, p.runs, p.min_seconds);
  return buf;
}

void run_sustained_scenario(const bench_options& options, bench_target& target, report& out) {
  auto result = std::make_shared<sustained_result>();
  result->plan = plan_of(options);
  // Printed even when the pass is cut short (Ctrl-C, a dead server): what was measured.
  out.set_table([result](std::FILE* f) { print_table(f, *result); });
  run_pass(target, *result);
  if (result->interrupted) std::printf("  interrupted after round %u\n", result->rounds());
  measurement m;
  m.operation = "sustained";
  m.connections = result->plan.sessions;
  m.run = 1;
  m.requests = static_cast<std::uint64_t>(result->rounds()) * result->plan.sessions;
  m.errors = result->samples.empty() ? 0 : result->samples.back().failed_runs;
  m.first_error = result->first_error;
  if (result->samples.size() > 1) {
    const auto& a = result->samples.front();
    const auto& b = result->samples.back();
    m.elapsed_s = std::chrono::duration<double>(b.at - a.at).count();
    if (a.cpu_s && b.cpu_s) m.server_cpu_s = *b.cpu_s - *a.cpu_s;
  }
  out.add_quietly(m);
}

}  // namespace agw::bench
