// Scenario "resume": how long a reconnecting client waits for its first missed
// event. One resume = TCP connect + GET /sessions/{id}/events with
// Last-Event-ID: N, timed from before connect() to the arrival of the whole first
// replayed frame (the `id: N+1` frame after `reconnected`); then the connection
// is closed (RST: the client leaves with the rest of the replay unread). Resumes
// run one at a time over fresh connections (a latency, not a throughput), with a
// fixed random seed.
//
// The session: --session-events events (default 5000) from one max-speed mock
// run, followed by one subscriber (the anchor) opened before the run.
// Cases, each --requests resumes (default 1000) per run, after 50 untimed ones:
//   ring        N in [last-100, last-1]: the ring (GATEWAY_SSE_BUFFER_SIZE, 100)
//               holds everything after N; the anchor keeps the ring alive (an
//               idle session with no subscriber releases its ring).
//   log         N in [0, last-201]: older than the ring, the first page comes from
//               the SQLite event log (pages of --sse-subscriber-queue / 4 events).
//   log-recent  N in [last-100, last-1] after the anchor left and the server let
//               the ring go: recent events, but read from the log.
// Also reported: time to the `reconnected` frame, server CPU per resume. A
// resume is an error unless it answers 200, sends `reconnected` with gap false
// and replayed = last - N, then the frame with id N+1.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/bench/latency_recorder.hpp"
#include "tests/bench/scenario.hpp"
#include "tests/bench/sse_client.hpp"

namespace agw::bench {
namespace {

constexpr unsigned default_session_events = 5000;
constexpr std::uint64_t default_resumes = 1000;
constexpr unsigned warmup_resumes = 50;
constexpr std::int64_t ring_size = 100;  // the server's default GATEWAY_SSE_BUFFER_SIZE

struct resume_result {
  bool ok = false;
  std::int64_t reconnected_ns = 0;
  std::int64_t first_frame_ns = 0;
  std::string error;
};

// Finds the integer after `"key":` in a JSON text; nullopt when absent.
std::optional<std::int64_t> json_int(std::string_view text, std::string_view key) {
  const std::string k = "\"" + std::string(key) + "\":";
  const auto at = text.find(k);
  if (at == std::string_view::npos) return std::nullopt;
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data() + at + k.size(), text.data() + text.size(), v);
  if (ec != std::errc()) return std::nullopt;
  return v;
}

resume_result resume_once(std::uint16_t port, const std::string& session, std::int64_t after, std::int64_t last,
                          std::string& data) {
  resume_result out;
  const std::string request = "GET /sessions/" + session + "/events HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                              "\r\nAccept: text/event-stream\r\nLast-Event-ID: " + std::to_string(after) + "\r\n\r\n";
  data.clear();
  const auto start = fleet_clock::now();
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    out.error = std::string("socket: ") + std::strerror(errno);
    return out;
  }
  auto finish = [&](std::string error) {
    // RST rather than FIN: no TIME_WAIT pile-up, and the server's next write fails at once.
    linger lg{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    ::close(fd);
    out.error = std::move(error);
    out.ok = out.error.empty();
    return out;
  };
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    return finish(std::string("connect: ") + std::strerror(errno));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
    return finish(std::string("send: ") + std::strerror(errno));

  std::size_t reconnected_at = std::string::npos;  // offset of "event: reconnected"
  std::size_t id_at = std::string::npos;           // offset of the first "\nid: " after it
  bool head_checked = false;
  char buf[65536];
  while (true) {
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return finish(n == 0 ? "closed before the first replayed frame" : std::string("recv: ") + std::strerror(errno));
    const auto now = fleet_clock::now();
    const std::size_t old = data.size();
    data.append(buf, static_cast<std::size_t>(n));
    if (!head_checked) {
      const auto head_end = data.find("\r\n\r\n");
      if (head_end == std::string::npos) continue;
      if (!data.starts_with("HTTP/1.1 200")) return finish(data.substr(0, std::min<std::size_t>(data.find('\r'), 120)));
      head_checked = true;
    }
    if (reconnected_at == std::string::npos) {
      reconnected_at = data.find("event: reconnected", old >= 20 ? old - 20 : 0);
      if (reconnected_at == std::string::npos) continue;
      out.reconnected_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - start).count();
    }
    if (id_at == std::string::npos) {
      id_at = data.find("\nid: ", std::max(reconnected_at, old >= 5 ? old - 5 : 0));
      if (id_at == std::string::npos) continue;
    }
    const auto frame_end = data.find("\n\n", std::max(id_at + 1, old >= 2 ? old - 2 : 0));
    if (frame_end == std::string::npos) continue;
    out.first_frame_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - start).count();
    break;
  }
  // Check what arrived: reconnected's fields, then the id.
  std::string_view rec = std::string_view(data).substr(reconnected_at);
  rec = rec.substr(0, rec.find("\n\n"));
  const auto replayed = json_int(rec, "replayed");
  if (rec.find("\"gap\":false") == std::string_view::npos)
    return finish("reconnected with gap: " + std::string(rec.substr(0, 200)));
  if (!replayed || *replayed != last - after)
    return finish("reconnected says replayed " + (replayed ? std::to_string(*replayed) : std::string("?")) + ", expected " +
                  std::to_string(last - after));
  std::int64_t id = -1;
  std::from_chars(data.data() + id_at + 5, data.data() + data.size(), id);
  if (id != after + 1) return finish("first replayed id " + std::to_string(id) + ", expected " + std::to_string(after + 1));
  return finish("");
}

struct resume_run {
  std::string label;
  unsigned run = 0;
  std::uint64_t resumes = 0;
  std::uint64_t errors = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  double rec_p50_ms = 0, rec_p99_ms = 0;  // to `reconnected`
  double wall_s = 0;
  std::optional<double> server_cpu_s;
  std::optional<double> server_rqwait_s;  // summed over the server's threads
  double client_cpu_s = 0;
  double client_rqwait_s = 0;
  std::string first_error;

  std::optional<double> us_per_resume() const {
    if (!server_cpu_s || resumes == 0) return std::nullopt;
    return *server_cpu_s * 1e6 / static_cast<double>(resumes);
  }
};

struct resume_case {
  std::string label;
  std::int64_t lo = 0, hi = 0;  // N uniform in [lo, hi]
};

resume_run measure_resumes(bench_target& target, const std::string& session, std::int64_t last, const resume_case& c,
                           std::uint64_t count, unsigned run_no, std::mt19937_64& rng, sse_fleet& anchor) {
  resume_run out;
  out.label = c.label;
  out.run = run_no;
  std::uniform_int_distribution<std::int64_t> pick(c.lo, c.hi);
  std::string data;
  data.reserve(256 * 1024);
  latency_recorder first, rec;
  first.reserve(count);
  rec.reserve(count);
  const auto cpu_before = target.server_cpu_seconds();
  const double client_before = process_cpu_seconds();
  const auto client_wait_before = thread_runqueue_wait_ns();
  auto server_wait = [&target]() -> std::optional<double> {
    if (!target.server) return std::nullopt;
    double w = 0;
    for (const auto& t : target.server->thread_samples()) w += t.runqueue_wait_seconds;
    return w;
  };
  const auto server_wait_before = server_wait();
  const auto start = fleet_clock::now();
  for (std::uint64_t i = 0; i < count; ++i) {
    if (target.interrupted && target.interrupted->load()) break;
    auto r = resume_once(target.port, session, pick(rng), last, data);
    ++out.resumes;
    if (!r.ok) {
      ++out.errors;
      if (out.first_error.empty()) out.first_error = r.error;
      continue;
    }
    first.record(std::chrono::nanoseconds(r.first_frame_ns));
    rec.record(std::chrono::nanoseconds(r.reconnected_ns));
    if (i % 64 == 63) anchor.poll(0);  // keep the anchor's heartbeats read
  }
  out.wall_s = std::chrono::duration<double>(fleet_clock::now() - start).count();
  const auto cpu_after = target.server_cpu_seconds();
  out.client_cpu_s = process_cpu_seconds() - client_before;
  out.client_rqwait_s = static_cast<double>(thread_runqueue_wait_ns() - client_wait_before) / 1e9;
  if (cpu_before && cpu_after) out.server_cpu_s = *cpu_after - *cpu_before;
  if (auto after = server_wait(); after && server_wait_before) out.server_rqwait_s = *after - *server_wait_before;
  out.p50_ms = first.percentile_us(50) / 1000.0;
  out.p99_ms = first.percentile_us(99) / 1000.0;
  out.max_ms = first.percentile_us(100) / 1000.0;
  out.rec_p50_ms = rec.percentile_us(50) / 1000.0;
  out.rec_p99_ms = rec.percentile_us(99) / 1000.0;
  return out;
}

void print_table(std::FILE* out, const std::vector<resume_run>& rows, const std::vector<resume_case>& cases, std::int64_t last) {
  std::fprintf(
      out,
      "latency = connect + GET /events with Last-Event-ID N -> the whole first replayed frame (after reconnected),\n"
      "in ms; reconn = to the reconnected frame; one resume at a time; srv_us/res = server CPU us per resume\n"
      "(the replay the server goes on writing after the client left is included); rqwait = s the server's threads /\n"
      "the client sat runnable without a CPU during the run (a busy machine shows in p99 there); session of %lld events\n",
      static_cast<long long>(last));
  for (const auto& c : cases)
    std::fprintf(out, "  %-10s N in [%lld, %lld]\n", c.label.c_str(), static_cast<long long>(c.lo), static_cast<long long>(c.hi));
  std::fprintf(out, "%-10s %-6s %8s %8s %8s %8s %9s %9s %9s %10s %10s %8s %10s %7s\n", "case", "run", "resumes", "p50_ms",
               "p99_ms", "max_ms", "reconn50", "reconn99", "srv_cpu", "srv_us/res", "srv_rqwait", "cli_cpu", "cli_rqwait",
               "errors");
  for (const auto& c : cases) {
    std::vector<double> resumes, p50, p99, mx, r50, r99, cpu, per, cli, errors, srw, crw;
    bool have_cpu = true, have_srw = true;
    for (const auto& r : rows) {
      if (r.label != c.label) continue;
      std::fprintf(out, "%-10s %-6u %8llu %8.3f %8.3f %8.3f %9.3f %9.3f %9s %10s %10s %8.2f %10.2f %7llu\n", r.label.c_str(),
                   r.run, static_cast<unsigned long long>(r.resumes), r.p50_ms, r.p99_ms, r.max_ms, r.rec_p50_ms, r.rec_p99_ms,
                   format_optional(r.server_cpu_s, "%.2f").c_str(), format_optional(r.us_per_resume(), "%.0f").c_str(),
                   format_optional(r.server_rqwait_s, "%.2f").c_str(), r.client_cpu_s, r.client_rqwait_s,
                   static_cast<unsigned long long>(r.errors));
      crw.push_back(r.client_rqwait_s);
      if (r.server_rqwait_s)
        srw.push_back(*r.server_rqwait_s);
      else
        have_srw = false;
      resumes.push_back(static_cast<double>(r.resumes));
      p50.push_back(r.p50_ms);
      p99.push_back(r.p99_ms);
      mx.push_back(r.max_ms);
      r50.push_back(r.rec_p50_ms);
      r99.push_back(r.rec_p99_ms);
      cli.push_back(r.client_cpu_s);
      errors.push_back(static_cast<double>(r.errors));
      if (r.server_cpu_s && r.us_per_resume()) {
        cpu.push_back(*r.server_cpu_s);
        per.push_back(*r.us_per_resume());
      } else {
        have_cpu = false;
      }
    }
    if (resumes.empty()) continue;
    auto m = [have_cpu](const std::vector<double>& v) { return have_cpu ? std::optional<double>(median(v)) : std::nullopt; };
    std::fprintf(out, "%-10s %-6s %8.0f %8.3f %8.3f %8.3f %9.3f %9.3f %9s %10s %10s %8.2f %10.2f %7.0f\n", c.label.c_str(),
                 "median", median(resumes), median(p50), median(p99), median(mx), median(r50), median(r99),
                 format_optional(m(cpu), "%.2f").c_str(), format_optional(m(per), "%.0f").c_str(),
                 format_optional(have_srw ? std::optional<double>(median(srw)) : std::nullopt, "%.2f").c_str(), median(cli),
                 median(crw), median(errors));
  }
  std::fprintf(out, "aims (issue): resume p50 <= 1 ms and p99 <= 2 ms, also when the replay comes from the log\n");
}

measurement to_measurement(const resume_run& r) {
  measurement m;
  m.operation = "resume " + r.label;
  m.connections = 1;
  m.run = r.run;
  m.requests_per_s = r.wall_s > 0 ? static_cast<double>(r.resumes) / r.wall_s : 0.0;
  m.p50_us = r.p50_ms * 1000.0;
  m.p99_us = r.p99_ms * 1000.0;
  m.requests = r.resumes;
  m.errors = r.errors;
  m.elapsed_s = r.wall_s;
  m.server_cpu_s = r.server_cpu_s;
  m.client_cpu_s = r.client_cpu_s;
  m.first_error = r.first_error;
  return m;
}

}  // namespace

std::string describe_resume_scenario(const bench_options& options) {
  const unsigned events = options.session_events ? options.session_events : default_session_events;
  const auto count = options.requests ? options.requests : default_resumes;
  return std::to_string(count) + " resumes per case (ring, log, log-recent) of a " + std::to_string(events) + "-event session";
}

void run_resume_scenario(const bench_options& options, bench_target& target, report& out) {
  const unsigned events = options.session_events ? options.session_events : default_session_events;
  const std::uint64_t count = options.requests ? options.requests : default_resumes;
  const auto* interrupted = target.interrupted;
  auto rows = std::make_shared<std::vector<resume_run>>();
  auto cases = std::make_shared<std::vector<resume_case>>();
  auto last_holder = std::make_shared<std::int64_t>(0);
  out.set_table([rows, cases, last_holder](std::FILE* f) { print_table(f, *rows, *cases, *last_holder); });

  // The session: one run of events - 3 tokens (status, tokens, usage, done).
  const unsigned tokens = events - 3;
  const std::string session = create_session(
      target.port,
      R"({"title":"bench resume","metadata":{"bench":"gateway_bench","scenario":"resume"},"config":{"provider":"mock","mock":{"tokens":)" +
          std::to_string(tokens) + "}}}");
  const std::string host = "127.0.0.1:" + std::to_string(target.port);
  sse_fleet fleet(target.port);
  const auto anchor =
      fleet.open("GET /sessions/" + session + "/events HTTP/1.1\r\nHost: " + host + "\r\nAccept: text/event-stream\r\n\r\n");
  fleet.run_until([&] { return fleet.heads() + fleet.ended_count() >= 1; }, fleet_clock::now() + std::chrono::seconds(10),
                  interrupted);
  if (fleet.conn(anchor).ended())
    throw std::runtime_error("the anchor subscriber could not connect: " + fleet.conn(anchor).error);
  const std::string body = R"({"content":"bench resume"})";
  fleet.open("POST /sessions/" + session + "/messages HTTP/1.1\r\nHost: " + host +
             "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nConnection: close\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body);
  fleet.run_until([&] { return fleet.settled() == fleet.size(); }, fleet_clock::now() + std::chrono::seconds(120), interrupted);
  if (interrupted && interrupted->load()) return;
  if (fleet.conn(anchor).dones != 1)
    throw std::runtime_error("the anchor subscriber did not get the run's done: " + fleet.conn(anchor).error);
  const std::int64_t last = session_last_event_id(target.port, session);
  *last_holder = last;
  std::printf("session %s: %lld events (run of %u tokens); the anchor subscriber got %llu frames\n", session.c_str(),
              static_cast<long long>(last), tokens, static_cast<unsigned long long>(fleet.conn(anchor).frames));
  if (last < 2 * ring_size + 10) throw std::runtime_error("the session is too short for the log case");

  *cases = {
      {"ring", last - ring_size, last - 1}, {"log", 0, last - 2 * ring_size - 1}, {"log-recent", last - ring_size, last - 1}};
  std::mt19937_64 rng(20261122);
  for (const auto& c : *cases) {
    if (interrupted && interrupted->load()) return;
    if (c.label == "log-recent") {
      // Let the ring go: the anchor leaves; its stream ends at its next heartbeat, as do
      // the resumes' streams; with no subscriber and no run the channel drops its ring.
      fleet.close(anchor);
      const auto until = fleet_clock::now() + std::chrono::seconds(15);
      while (fleet_clock::now() < until) {
        auto open = metric_value(target.port, "gateway_sse_streams_open");
        if (open && *open <= 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    auto warm = measure_resumes(target, session, last, c, warmup_resumes, 0, rng, fleet);
    std::printf("%s: warm-up %llu resumes, p50 %.3f ms, %llu errors (not reported)\n", c.label.c_str(),
                static_cast<unsigned long long>(warm.resumes), warm.p50_ms, static_cast<unsigned long long>(warm.errors));
    if (!warm.first_error.empty()) std::printf("    first error: %s\n", warm.first_error.c_str());
    for (unsigned run = 1; run <= options.repeat; ++run) {
      if (interrupted && interrupted->load()) return;
      auto r = measure_resumes(target, session, last, c, count, run, rng, fleet);
      target.check_alive();
      std::printf(
          "  %-10s run %u: %llu resumes in %.2f s, first replayed frame p50 %.3f ms p99 %.3f ms max %.3f ms, "
          "reconnected p50 %.3f ms p99 %.3f ms, server cpu %s s (%s us/resume; its threads waited %s s for a CPU), "
          "client waited %.2f s, %llu errors\n",
          r.label.c_str(), run, static_cast<unsigned long long>(r.resumes), r.wall_s, r.p50_ms, r.p99_ms, r.max_ms, r.rec_p50_ms,
          r.rec_p99_ms, format_optional(r.server_cpu_s, "%.2f").c_str(), format_optional(r.us_per_resume(), "%.0f").c_str(),
          format_optional(r.server_rqwait_s, "%.2f").c_str(), r.client_rqwait_s, static_cast<unsigned long long>(r.errors));
      if (!r.first_error.empty()) std::printf("    first error: %s\n", r.first_error.c_str());
      std::fflush(stdout);
      out.add_quietly(to_measurement(r));
      rows->push_back(std::move(r));
    }
  }
  fleet.close_all();
}

}  // namespace agw::bench
