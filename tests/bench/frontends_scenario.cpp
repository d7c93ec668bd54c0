// Scenario "frontends": what each wire encoding costs the server per event per stream,
// side by side: the contract's SSE (POST /sessions/{id}/messages), AG-UI (POST
// /ag-ui/{id}) and the AI SDK's UI message stream (POST /sessions/{id}/chat), each with
// S streams (default 100) following one run.
//
// Per (encoding, run): a fresh session (config mock: K tokens, default 20000, at 4000
// tokens/s, so the run is live while the streams join); one POST starts the run, the
// S-1 others are the same POST with the same key (Idempotency-Key, or AG-UI's runId),
// which attach to it from its first event (replayed, then live): every stream gets the
// whole run in its encoding. Each request says Connection: close, so a stream ends with
// the server closing it after the run's last chunk. Server CPU (utime+stime) is read
// from the POST of the first stream to the last stream's end.
//
// A stream is complete when it ended by the server's close after a 200 and got as many
// `id:` lines as the first stream (all streams of a run in one encoding carry the same
// bytes); a contract stream must also have got exactly one done. The fleet's id
// continuity check is meant for the contract's one-frame-per-event SSE: the front-end
// encodings repeat an id (events a session event opens around itself) and skip ids
// (events with no form), so it is ignored for them.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tests/bench/scenario.hpp"
#include "tests/bench/sse_client.hpp"

namespace agw::bench {
namespace {

constexpr unsigned default_tokens = 20000;
constexpr unsigned default_streams = 100;
constexpr double tokens_per_second = 4000;  // the run lasts K/4000 s: long enough for S streams to join
constexpr std::size_t max_pending_connects = 128;

struct encoding {
  const char* name;
  const char* route;
};
const encoding encodings[] = {{"contract SSE", "messages"}, {"AG-UI", "ag-ui"}, {"UI message stream", "chat"}};

struct frontend_run {
  const encoding* enc = nullptr;
  unsigned streams = 0;
  unsigned run = 0;
  std::uint64_t events = 0;  // session events of the run
  std::uint64_t complete = 0;
  std::uint64_t errors = 0;
  std::uint64_t frames = 0;  // id: lines per stream (the first stream's)
  std::uint64_t bytes = 0;   // read by all streams
  double wall_s = 0;
  std::optional<double> server_cpu_s;
  double client_cpu_s = 0;
  std::string first_error;
  bool interrupted = false;

  // Server CPU per session event per stream, us.
  std::optional<double> us_per_event_stream() const {
    if (!server_cpu_s || events == 0 || complete == 0) return std::nullopt;
    return *server_cpu_s * 1e6 / static_cast<double>(events * streams);
  }
};

unsigned tokens_for(const bench_options& o) { return o.tokens_given ? o.tokens : default_tokens; }
unsigned streams_for(const bench_options& o) { return o.subscribers.empty() ? default_streams : o.subscribers.front(); }

std::string request_for(const encoding& enc, std::uint16_t port, const std::string& session, const std::string& key) {
  std::string target, body, extra;
  if (std::string_view(enc.route) == "ag-ui") {
    target = "/ag-ui/" + session;
    body = R"({"runId":")" + key + R"(","messages":[{"id":"u1","role":"user","content":"bench"}]})";
  } else if (std::string_view(enc.route) == "chat") {
    target = "/sessions/" + session + "/chat";
    body =
        R"({"id":"c1","trigger":"submit-message","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"bench"}]}]})";
    extra = "Idempotency-Key: " + key + "\r\n";
  } else {
    target = "/sessions/" + session + "/messages";
    body = R"({"content":"bench"})";
    extra = "Idempotency-Key: " + key + "\r\n";
  }
  return "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
         "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nConnection: close\r\n" + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

frontend_run measure(const bench_options& options, bench_target& target, const encoding& enc, unsigned run_no) {
  frontend_run out;
  out.enc = &enc;
  out.streams = streams_for(options);
  out.run = run_no;
  const auto* interrupted = target.interrupted;
  const std::string session =
      create_session(target.port, R"({"title":"bench frontends","config":{"provider":"mock","mock":{"tokens":)" +
                                      std::to_string(tokens_for(options)) + R"(,"tokens_per_second":)" +
                                      std::to_string(static_cast<int>(tokens_per_second)) + "}}}");
  const std::string request = request_for(enc, target.port, session, "bench-" + std::to_string(run_no));

  sse_fleet fleet(target.port);
  const auto cpu_before = target.server_cpu_seconds();
  const double client_before = process_cpu_seconds();
  const auto start = fleet_clock::now();
  const auto limit = start + std::chrono::seconds(120);
  fleet.open(request);  // starts the run
  fleet.run_until([&] { return fleet.heads() + fleet.ended_count() >= 1; }, limit, interrupted);
  fleet.open_many(
      out.streams - 1, [&](std::size_t) { return request; }, max_pending_connects, limit, interrupted);
  fleet.run_until([&] { return fleet.ended_count() == fleet.size(); }, limit, interrupted);
  const auto stop = fleet_clock::now();
  const auto cpu_after = target.server_cpu_seconds();
  out.client_cpu_s = process_cpu_seconds() - client_before;
  if (interrupted && interrupted->load()) {
    out.interrupted = true;
    return out;
  }
  target.check_alive();
  if (cpu_before && cpu_after) out.server_cpu_s = *cpu_after - *cpu_before;
  out.wall_s = std::chrono::duration<double>(stop - start).count();
  const std::int64_t last = session_last_event_id(target.port, session);
  out.events = last > 0 ? static_cast<std::uint64_t>(last) : 0;  // a fresh session: its events are the run's
  out.frames = fleet.conn(0).frames;
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    const auto& c = fleet.conn(i);
    out.bytes += c.bytes;
    std::string why;
    if (c.status != 200)
      why = c.error.empty() ? "no 200" : c.error;
    else if (!c.eof)
      why = c.error.empty() ? "not closed by the server" : c.error;
    else if (c.frames != out.frames || c.frames == 0)
      why = std::to_string(c.frames) + " id lines, the first stream " + std::to_string(out.frames);
    else if (std::string_view(enc.route) == "messages" && (c.dones != 1 || c.id_error))
      why = c.id_error ? c.error : std::to_string(c.dones) + " done events";
    if (why.empty()) {
      ++out.complete;
    } else {
      ++out.errors;
      if (out.first_error.empty()) out.first_error = "stream " + std::to_string(i) + ": " + why;
    }
  }
  fleet.close_all();
  return out;
}

void print_table(std::FILE* out, const std::vector<frontend_run>& rows) {
  std::fprintf(out,
               "us/ev/stream = server CPU (utime+stime) / (session events x streams), from the first POST to the last\n"
               "stream's end; us/event = server CPU per session event for all the streams together\n");
  std::fprintf(out, "%-18s %-6s %7s %7s %9s %8s %8s %13s %9s %9s %8s %7s\n", "encoding", "run", "streams", "events", "id_lines",
               "MiB", "srv_cpu", "us/ev/stream", "us/event", "wall_s", "complete", "errors");
  for (const auto& enc : encodings) {
    std::vector<double> cpu, per, per_event, wall, mib;
    bool have = true;
    unsigned streams = 0;
    double events = 0, frames = 0, complete = 0, errors = 0;
    for (const auto& r : rows) {
      if (r.enc != &enc) continue;
      streams = r.streams;
      const double m = static_cast<double>(r.bytes) / (1024.0 * 1024.0);
      std::optional<double> pe;
      if (r.server_cpu_s && r.events) pe = *r.server_cpu_s * 1e6 / static_cast<double>(r.events);
      std::fprintf(out, "%-18s %-6u %7u %7llu %9llu %8.1f %8s %13s %9s %9.2f %8llu %7llu\n", enc.name, r.run, r.streams,
                   static_cast<unsigned long long>(r.events), static_cast<unsigned long long>(r.frames), m,
                   format_optional(r.server_cpu_s, "%.2f").c_str(), format_optional(r.us_per_event_stream(), "%.3f").c_str(),
                   format_optional(pe, "%.1f").c_str(), r.wall_s, static_cast<unsigned long long>(r.complete),
                   static_cast<unsigned long long>(r.errors));
      if (r.server_cpu_s && r.us_per_event_stream() && pe) {
        cpu.push_back(*r.server_cpu_s);
        per.push_back(*r.us_per_event_stream());
        per_event.push_back(*pe);
      } else {
        have = false;
      }
      wall.push_back(r.wall_s);
      mib.push_back(m);
      events = static_cast<double>(r.events);
      frames = static_cast<double>(r.frames);
      complete += static_cast<double>(r.complete);
      errors += static_cast<double>(r.errors);
    }
    if (wall.empty()) continue;
    auto m = [have](const std::vector<double>& v) { return have ? std::optional<double>(median(v)) : std::nullopt; };
    std::fprintf(out, "%-18s %-6s %7u %7.0f %9.0f %8.1f %8s %13s %9s %9.2f %8.0f %7.0f\n", enc.name, "median", streams, events,
                 frames, median(mib), format_optional(m(cpu), "%.2f").c_str(), format_optional(m(per), "%.3f").c_str(),
                 format_optional(m(per_event), "%.1f").c_str(), median(wall), complete, errors);
  }
}

measurement to_measurement(const frontend_run& r) {
  measurement m;
  m.operation = std::string("frontends ") + r.enc->name;
  m.connections = r.streams;
  m.run = r.run;
  m.requests = r.streams;
  m.errors = r.errors;
  m.elapsed_s = r.wall_s;
  m.server_cpu_s = r.server_cpu_s;
  m.client_cpu_s = r.client_cpu_s;
  m.first_error = r.first_error;
  return m;
}

}  // namespace

std::string describe_frontends_scenario(const bench_options& options) {
  return "per encoding (contract SSE, AG-UI, UI message stream): one run of " + std::to_string(tokens_for(options)) +
         " tokens at 4000/s followed by " + std::to_string(streams_for(options)) + " streams";
}

void run_frontends_scenario(const bench_options& options, bench_target& target, report& out) {
  auto rows = std::make_shared<std::vector<frontend_run>>();
  out.set_table([rows](std::FILE* f) { print_table(f, *rows); });
  for (const auto& enc : encodings) {
    for (unsigned run = 1; run <= options.repeat; ++run) {
      if (target.interrupted && target.interrupted->load()) return;
      auto r = measure(options, target, enc, run);
      if (r.interrupted) return;
      std::printf("  %-18s run %u: %llu events x %u streams, server cpu %s s = %s us per event per stream, %llu/%u complete\n",
                  enc.name, run, static_cast<unsigned long long>(r.events), r.streams,
                  format_optional(r.server_cpu_s, "%.2f").c_str(), format_optional(r.us_per_event_stream(), "%.3f").c_str(),
                  static_cast<unsigned long long>(r.complete), r.streams);
      if (!r.first_error.empty()) std::printf("    first error: %s\n", r.first_error.c_str());
      std::fflush(stdout);
      out.add_quietly(to_measurement(r));
      rows->push_back(std::move(r));
    }
  }
}

}  // namespace agw::bench
