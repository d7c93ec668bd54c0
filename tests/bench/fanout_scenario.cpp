// Scenario "fanout": one session, S subscribers, one run as fast as the server
// goes. What it costs the server to hand one event to one more subscriber (CPU
// per delivery) and how many deliveries per second it sustains, with every
// subscriber getting every event.
//
// Per (S, run): a fresh session (config mock, 10 tokens); S connections GET
// /sessions/{id}/events (no Last-Event-ID: live events only), opened at most 256
// at a time; a 10-token warm-up run is POSTed and the bench waits until every
// subscriber has its done — so all S are subscribed, and the session's strand,
// ring and the connections are warm. Then the session's config becomes
// {"provider":"mock","mock":{"tokens":K}}, and the clock starts when the measured
// POST goes out; it stops at the last subscriber's done. Server CPU (utime+stime
// of the whole process) and the client's own CPU are read around that window.
//
// A subscriber is complete when it is still connected, got exactly one done, its
// first id is the warm-up's done id + 1, every id followed the previous one, and
// its done is the POST stream's done (same id). Anything else is an error (a
// slow subscriber cut by the server's queue limit shows up here, and in the
// server's gateway_sse_slow_subscribers_dropped_total, also reported).
//
// The client is one thread, one epoll set (sse_fleet): big reads, a memchr line
// scan, no allocation per frame. Its CPU share of the wall time is reported so a
// client-bound figure is visible as such.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/bench/scenario.hpp"
#include "tests/bench/sse_client.hpp"

namespace agw::bench {
namespace {

constexpr unsigned warmup_tokens = 10;
constexpr unsigned default_tokens = 20000;
constexpr std::size_t max_pending_connects = 256;

struct fanout_run {
  unsigned subscribers = 0;
  unsigned run = 0;
  unsigned tokens = 0;
  std::uint64_t events = 0;      // events of the measured run
  std::uint64_t deliveries = 0;  // frames the subscribers received in the window
  std::uint64_t complete = 0;
  std::uint64_t errors = 0;
  double wall_s = 0;
  double deliveries_per_s = 0;
  double first_done_s = 0;  // first subscriber's done, from the POST
  std::optional<double> server_cpu_s;
  std::optional<double> server_rqwait_s;
  std::optional<double> peak_rss_mib;   // VmHWM during the window
  std::optional<double> rss_after_mib;  // VmRSS right after
  std::optional<double> dropped;        // gateway_sse_slow_subscribers_dropped_total delta
  double client_cpu_s = 0;
  double client_rqwait_s = 0;
  std::uint64_t client_reads = 0;
  std::uint64_t client_bytes = 0;
  std::string first_error;
  std::vector<std::pair<std::size_t, server_process::thread_sample>> threads;
  bool interrupted = false;

  std::optional<double> us_per_delivery() const {
    if (!server_cpu_s || deliveries == 0) return std::nullopt;
    return *server_cpu_s * 1e6 / static_cast<double>(deliveries);
  }
  double client_busy() const { return wall_s > 0 ? client_cpu_s / wall_s : 0.0; }
};

unsigned tokens_for(const bench_options& options) { return options.tokens_given ? options.tokens : default_tokens; }

std::vector<unsigned> subscriber_counts(const bench_options& options) {
  return options.subscribers.empty() ? std::vector<unsigned>{1, 100, 1000} : options.subscribers;
}

std::string config_body(unsigned tokens) {
  return R"({"config":{"provider":"mock","mock":{"tokens":)" + std::to_string(tokens) + "}}}";
}

// Streams of earlier runs end when the server's next heartbeat write fails; wait
// for that so they do not share the next window.
void wait_streams_closed(bench_target& target) {
  const auto until = fleet_clock::now() + std::chrono::seconds(10);
  while (fleet_clock::now() < until) {
    auto open = metric_value(target.port, "gateway_sse_streams_open");
    if (!open || *open <= 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

fanout_run measure_fanout(const bench_options& options, bench_target& target, unsigned subscribers, unsigned run_no) {
  fanout_run out;
  out.subscribers = subscribers;
  out.run = run_no;
  out.tokens = tokens_for(options);
  const auto* interrupted = target.interrupted;
  wait_streams_closed(target);

  const std::string session =
      create_session(target.port, R"({"title":"bench fanout","metadata":{"bench":"gateway_bench","scenario":"fanout"},)" +
                                      config_body(warmup_tokens).substr(1));
  const std::string host = "127.0.0.1:" + std::to_string(target.port);
  const std::string subscribe =
      "GET /sessions/" + session + "/events HTTP/1.1\r\nHost: " + host + "\r\nAccept: text/event-stream\r\n\r\n";
  const std::string body = R"({"content":"bench fanout"})";
  const std::string post =
      "POST /sessions/" + session + "/messages HTTP/1.1\r\nHost: " + host +
      "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nConnection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;

  sse_fleet fleet(target.port);
  fleet.open_many(
      subscribers, [&](std::size_t) { return subscribe; }, max_pending_connects, fleet_clock::now() + std::chrono::seconds(60),
      interrupted);
  if (interrupted && interrupted->load()) {
    out.interrupted = true;
    return out;
  }
  const std::size_t subs = subscribers;  // indices [0, subs) are subscribers

  // Warm-up run: proves every subscriber is subscribed (it gets this done).
  const auto warm_poster = fleet.open(post);
  fleet.run_until([&] { return fleet.settled() == fleet.size(); }, fleet_clock::now() + std::chrono::seconds(60), interrupted);
  const auto& warm = fleet.conn(warm_poster);
  if (warm.dones != 1 || warm.last_done_id <= 0)
    throw std::runtime_error("the warm-up run did not end with a done: " +
                             (warm.error.empty() ? std::string("no done") : warm.error));
  const std::int64_t warm_last = warm.last_done_id;
  std::size_t not_connected = 0;
  std::string connect_error;
  for (std::size_t i = 0; i < subs; ++i) {
    const auto& c = fleet.conn(i);
    if (c.ended() || c.dones != 1 || c.last_done_id != warm_last) {
      ++not_connected;
      if (connect_error.empty())
        connect_error =
            "subscriber " + std::to_string(i) + " missed the warm-up done: " + (c.error.empty() ? "no done" : c.error);
    }
  }
  if (not_connected)
    std::printf("    %zu of %u subscribers not connected before the run: %s\n", not_connected, subscribers,
                connect_error.c_str());

  patch_session(target.port, session, config_body(out.tokens));
  fleet.reset_window();
  const auto dropped_before = metric_value(target.port, "gateway_sse_slow_subscribers_dropped_total");

  std::vector<server_process::thread_sample> threads_before;
  if (target.server) {
    target.server->reset_peak_rss();
    threads_before = target.server->thread_samples();
  }
  const auto cpu_before = target.server_cpu_seconds();
  const double client_before = process_cpu_seconds();
  const auto client_wait_before = thread_runqueue_wait_ns();
  const auto start = fleet_clock::now();
  const auto poster = fleet.open(post);
  // Generous: a 2-core machine at ~1 M deliveries/s needs S*K/1e6 s.
  const auto limit = std::chrono::seconds(60) + std::chrono::seconds(static_cast<long long>(subscribers) * out.tokens / 200000);
  fleet.run_until([&] { return fleet.settled() == fleet.size(); }, start + limit, interrupted);
  const auto stop = fleet_clock::now();
  const auto cpu_after = target.server_cpu_seconds();
  const double client_after = process_cpu_seconds();
  out.client_rqwait_s = static_cast<double>(thread_runqueue_wait_ns() - client_wait_before) / 1e9;
  out.client_cpu_s = client_after - client_before;
  out.client_reads = fleet.reads();
  out.client_bytes = fleet.bytes_read();
  if (interrupted && interrupted->load()) {
    out.interrupted = true;
    return out;
  }
  target.check_alive();
  if (cpu_before && cpu_after) out.server_cpu_s = *cpu_after - *cpu_before;
  if (target.server) {
    if (auto hwm = target.server->peak_rss_kib()) out.peak_rss_mib = static_cast<double>(*hwm) / 1024.0;
    if (auto rss = proc_status_kib(target.server->pid(), "VmRSS")) out.rss_after_mib = static_cast<double>(*rss) / 1024.0;
    double waited = 0;
    out.threads = target.server->thread_use_since(threads_before, waited);
    if (!out.threads.empty()) out.server_rqwait_s = waited;
  }
  if (auto dropped_after = metric_value(target.port, "gateway_sse_slow_subscribers_dropped_total");
      dropped_before && dropped_after)
    out.dropped = *dropped_after - *dropped_before;

  const auto& p = fleet.conn(poster);
  std::int64_t last_id = p.dones == 1 ? p.last_done_id : -1;
  if (last_id < 0) {
    // The POST stream failed: the subscribers' done still tells where the run ended.
    for (std::size_t i = 0; i < subs; ++i) last_id = std::max(last_id, fleet.conn(i).last_done_id);
    out.first_error = "the POST stream: " + (p.error.empty() ? std::string("no done") : p.error);
  }
  out.events = last_id > warm_last ? static_cast<std::uint64_t>(last_id - warm_last) : 0;
  auto last_done = start;
  auto first_done = fleet_clock::time_point::max();
  for (std::size_t i = 0; i < subs; ++i) {
    const auto& c = fleet.conn(i);
    out.deliveries += c.frames;
    std::string why;
    if (c.ended())
      why = c.error.empty() ? "disconnected" : c.error;
    else if (c.id_error)
      why = c.error;
    else if (c.dones != 1)
      why = "got " + std::to_string(c.dones) + " done events";
    else if (c.first_id != warm_last + 1)
      why = "first id " + std::to_string(c.first_id) + ", expected " + std::to_string(warm_last + 1);
    else if (c.last_done_id != last_id)
      why = "done at id " + std::to_string(c.last_done_id) + ", the run's is " + std::to_string(last_id);
    else if (c.frames != out.events)
      why = std::to_string(c.frames) + " frames of " + std::to_string(out.events);
    if (c.dones >= 1) {
      last_done = std::max(last_done, c.last_done_at);
      first_done = std::min(first_done, c.last_done_at);
    }
    if (why.empty()) {
      ++out.complete;
    } else {
      ++out.errors;
      if (out.first_error.empty())
        out.first_error = "subscriber " + std::to_string(i) + ": " + why + " (after " + std::to_string(c.frames) + " frames)";
    }
  }
  out.wall_s = std::chrono::duration<double>((out.complete ? last_done : stop) - start).count();
  out.first_done_s =
      first_done == fleet_clock::time_point::max() ? 0.0 : std::chrono::duration<double>(first_done - start).count();
  out.deliveries_per_s = out.wall_s > 0 ? static_cast<double>(out.deliveries) / out.wall_s : 0.0;
  fleet.close_all();
  return out;
}

void print_progress(const fanout_run& r) {
  std::printf(
      "  S=%-5u run %u: %llu events x %u subscribers = %llu deliveries in %.3f s = %.0f deliveries/s (first done at %.3f s)",
      r.subscribers, r.run, static_cast<unsigned long long>(r.events), r.subscribers,
      static_cast<unsigned long long>(r.deliveries), r.wall_s, r.deliveries_per_s, r.first_done_s);
  if (r.server_cpu_s)
    std::printf(", server cpu %.2f s = %s us/delivery", *r.server_cpu_s, format_optional(r.us_per_delivery(), "%.3f").c_str());
  if (r.server_rqwait_s) std::printf(" (its threads waited %.2f s for a CPU)", *r.server_rqwait_s);
  if (r.peak_rss_mib) std::printf(", peak rss %.1f MiB", *r.peak_rss_mib);
  std::printf(", client cpu %.2f s (%.0f%% of one core; %llu reads, %.1f MiB; waited %.2f s), complete %llu/%u", r.client_cpu_s,
              r.client_busy() * 100, static_cast<unsigned long long>(r.client_reads),
              static_cast<double>(r.client_bytes) / (1024.0 * 1024.0), r.client_rqwait_s,
              static_cast<unsigned long long>(r.complete), r.subscribers);
  if (r.dropped) std::printf(", server dropped %.0f slow", *r.dropped);
  std::printf("\n");
  if (!r.first_error.empty()) std::printf("    first error: %s\n", r.first_error.c_str());
  server_process::print_thread_use(r.threads);
  std::fflush(stdout);
}

void print_table(std::FILE* out, const std::vector<fanout_run>& rows) {
  std::fprintf(out,
               "deliveries/s = frames received by all subscribers / (POST sent -> last subscriber's done); srv_us/dlv =\n"
               "server CPU (utime+stime) us per delivery = server CPU s per million deliveries; cli_%%core = client CPU /\n"
               "wall (one client thread: near 100%% would mean the client limits the figure); rqwait = s runnable without\n"
               "a CPU; the server also writes the run to the POSTing connection (S+1 streams, not counted as deliveries)\n");
  std::fprintf(out, "%6s %-6s %6s %7s %10s %12s %8s %8s %10s %9s %8s %9s %10s %8s %8s %9s %7s\n", "subs", "run", "tokens",
               "events", "deliveries", "deliveries/s", "wall_s", "srv_cpu", "srv_us/dlv", "srv_rqw", "cli_cpu", "cli_%core",
               "cli_rqwait", "peak_MiB", "rss_MiB", "complete", "errors");
  auto row = [out](unsigned subs, const std::string& run, double tokens, double events, double deliveries, double dps,
                   double wall, std::optional<double> cpu, std::optional<double> per, std::optional<double> rqw, double ccpu,
                   double busy, double cwait, std::optional<double> peak, std::optional<double> rss, double complete,
                   double errors) {
    std::fprintf(out, "%6u %-6s %6.0f %7.0f %10.0f %12.0f %8.3f %8s %10s %9s %8.2f %8.0f%% %10.2f %8s %8s %9.0f %7.0f\n", subs,
                 run.c_str(), tokens, events, deliveries, dps, wall, format_optional(cpu, "%.2f").c_str(),
                 format_optional(per, "%.3f").c_str(), format_optional(rqw, "%.2f").c_str(), ccpu, busy * 100, cwait,
                 format_optional(peak, "%.1f").c_str(), format_optional(rss, "%.1f").c_str(), complete, errors);
  };
  std::vector<unsigned> groups;
  for (const auto& r : rows)
    if (std::find(groups.begin(), groups.end(), r.subscribers) == groups.end()) groups.push_back(r.subscribers);
  for (unsigned subs : groups) {
    std::vector<double> tokens, events, deliveries, dps, wall, cpu, per, rqw, ccpu, busy, cwait, peak, rss, complete, errors;
    bool have_cpu = true, have_rqw = true, have_peak = true, have_rss = true;
    for (const auto& r : rows) {
      if (r.subscribers != subs) continue;
      row(subs, std::to_string(r.run), r.tokens, static_cast<double>(r.events), static_cast<double>(r.deliveries),
          r.deliveries_per_s, r.wall_s, r.server_cpu_s, r.us_per_delivery(), r.server_rqwait_s, r.client_cpu_s, r.client_busy(),
          r.client_rqwait_s, r.peak_rss_mib, r.rss_after_mib, static_cast<double>(r.complete), static_cast<double>(r.errors));
      tokens.push_back(r.tokens);
      events.push_back(static_cast<double>(r.events));
      deliveries.push_back(static_cast<double>(r.deliveries));
      dps.push_back(r.deliveries_per_s);
      wall.push_back(r.wall_s);
      ccpu.push_back(r.client_cpu_s);
      busy.push_back(r.client_busy());
      cwait.push_back(r.client_rqwait_s);
      complete.push_back(static_cast<double>(r.complete));
      errors.push_back(static_cast<double>(r.errors));
      if (r.server_cpu_s && r.us_per_delivery()) {
        cpu.push_back(*r.server_cpu_s);
        per.push_back(*r.us_per_delivery());
      } else {
        have_cpu = false;
      }
      if (r.server_rqwait_s)
        rqw.push_back(*r.server_rqwait_s);
      else
        have_rqw = false;
      if (r.peak_rss_mib)
        peak.push_back(*r.peak_rss_mib);
      else
        have_peak = false;
      if (r.rss_after_mib)
        rss.push_back(*r.rss_after_mib);
      else
        have_rss = false;
    }
    auto m = [](bool have, const std::vector<double>& v) { return have ? std::optional<double>(median(v)) : std::nullopt; };
    row(subs, "median", median(tokens), median(events), median(deliveries), median(dps), median(wall), m(have_cpu, cpu),
        m(have_cpu, per), m(have_rqw, rqw), median(ccpu), median(busy), median(cwait), m(have_peak, peak), m(have_rss, rss),
        median(complete), median(errors));
  }
  // What one more subscriber costs: the S=1 run carries the per-event work (agent, commit,
  // the POST's own stream) that every S pays once.
  auto group_median = [&rows](unsigned subs, auto field) {
    std::vector<double> v;
    for (const auto& r : rows)
      if (r.subscribers == subs && r.server_cpu_s) v.push_back(field(r));
    return v.empty() ? std::optional<double>() : std::optional<double>(median(v));
  };
  const auto cpu = [](const fanout_run& r) { return *r.server_cpu_s; };
  const auto events = [](const fanout_run& r) { return static_cast<double>(r.events); };
  if (auto base = group_median(1, cpu)) {
    for (unsigned subs : groups) {
      if (subs <= 1) continue;
      auto c = group_median(subs, cpu);
      auto e = group_median(subs, events);
      if (c && e && *e > 0)
        std::fprintf(out, "marginal server CPU per delivery at S=%u (median CPU minus S=1's, over events x (S-1)): %.3f us\n",
                     subs, (*c - *base) * 1e6 / (*e * (subs - 1)));
    }
  }
  std::fprintf(out,
               "aims (issue): <= 0.5 us server CPU per delivery and > 3,000,000 deliveries/s at S=100 and S=1000, with every\n"
               "subscriber complete (errors 0)\n");
}

measurement to_measurement(const fanout_run& r) {
  measurement m;
  m.operation = "fanout";
  m.connections = r.subscribers;
  m.run = r.run;
  m.requests_per_s = r.deliveries_per_s;
  m.requests = r.subscribers;
  m.errors = r.errors;
  m.elapsed_s = r.wall_s;
  m.server_cpu_s = r.server_cpu_s;
  m.client_cpu_s = r.client_cpu_s;
  m.first_error = r.first_error;
  return m;
}

}  // namespace

std::string describe_fanout_scenario(const bench_options& options) {
  std::string subs;
  for (auto s : subscriber_counts(options)) subs += (subs.empty() ? "" : ",") + std::to_string(s);
  return "one run of " + std::to_string(tokens_for(options)) + " tokens to S=" + subs + " subscribers of one session";
}

void run_fanout_scenario(const bench_options& options, bench_target& target, report& out) {
  const auto counts = subscriber_counts(options);
  unsigned most = *std::max_element(counts.begin(), counts.end());
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < most + 64)
    std::printf("warning: RLIMIT_NOFILE is %llu, too few for %u subscribers\n", static_cast<unsigned long long>(files.rlim_cur),
                most);
  auto rows = std::make_shared<std::vector<fanout_run>>();
  out.set_table([rows](std::FILE* f) { print_table(f, *rows); });
  for (unsigned subs : counts) {
    std::printf("subscribers %u:\n", subs);
    for (unsigned run = 1; run <= options.repeat; ++run) {
      if (target.interrupted && target.interrupted->load()) return;
      auto r = measure_fanout(options, target, subs, run);
      if (r.interrupted) {
        std::printf("  S=%-5u run %u: interrupted, not reported\n", subs, run);
        return;
      }
      print_progress(r);
      out.add_quietly(to_measurement(r));
      rows->push_back(std::move(r));
    }
  }
}

}  // namespace agw::bench
