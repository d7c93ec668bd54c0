// Scenario "streams": C runs at once, each on its own session and its own
// connection. Every connection POSTs /sessions/{id}/messages and reads the
// chunked text/event-stream answer to its `done`; the figures are what a
// streaming client sees (delivered events/s, time to first token, how closely
// tokens keep a set pace) and what the server pays for them (CPU per event,
// peak RSS).
//
// Per (rate, C) and run: C fresh sessions with config {"mock":{"tokens":K}} (plus
// "tokens_per_second":R for a set rate) are created through the closed-loop
// driver, C connections are opened, then the clock starts and all C POSTs go out.
// The client is one io_context on 1–2 threads (--client-threads); responses are
// parsed in place (string_view over the read buffer, one read per completion),
// so apart from a line cut by a read boundary nothing is allocated per frame.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/bench/http_load.hpp"
#include "tests/bench/latency_recorder.hpp"
#include "tests/bench/run_response.hpp"
#include "tests/bench/scenario.hpp"

namespace agw::bench {
namespace {

// Drift is also reported for tokens from this index on (the steady state after the
// start, when every stream's POST arrives at once).
constexpr std::size_t steady_from_token = 10;

namespace net = boost::asio;
using tcp = net::ip::tcp;

constexpr std::size_t read_buffer_size = 16 * 1024;
constexpr std::string_view message_body = R"({"content":"bench"})";

std::string rate_label(double rate) {
  if (rate <= 0) return "max";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g/s", rate);
  return buf;
}

// ---------------------------------------------------------------------------
// The client: one connection per stream, all on one io_context.

struct run_shared {
  std::atomic<unsigned> remaining{0};
  std::function<void()> on_all_finished;  // posted to the watchdog's strand
};

class stream_connection {
 public:
  stream_connection(net::io_context& ioc, unsigned expected_tokens)
      : strand_(net::make_strand(ioc)), socket_(strand_), parser_(result_), buffer_(new char[read_buffer_size]) {
    result_.tokens.reserve(expected_tokens + 8);
  }

  bool connect(const tcp::endpoint& endpoint, std::string& error) {
    boost::system::error_code ec;
    socket_.connect(endpoint, ec);
    if (ec) {
      error = ec.message();
      socket_.close(ec);
      return false;
    }
    socket_.set_option(tcp::no_delay(true), ec);
    return true;
  }

  // Called before the io threads run: the write goes out at once (Asio tries it
  // speculatively), the read is pending from the start.
  void start(const std::string& request, run_shared& shared) {
    shared_ = &shared;
    request_ = &request;
    if (!socket_.is_open()) {
      result_.fail("connect failed");
      finished_ = true;
      shared.remaining.fetch_sub(1);
      return;
    }
    result_.sent = clock_type::now();
    net::async_write(socket_, net::buffer(*request_), [this](const boost::system::error_code& ec, std::size_t) {
      if (ec && !finished_) result_.fail("write: " + ec.message());
    });
    read_more();
  }

  // From the watchdog: give up on this stream (runs on its strand).
  void abandon(const char* why) {
    net::post(strand_, [this, why] {
      if (finished_) return;
      if (!result_.done) result_.fail(why);
      boost::system::error_code ignored;
      socket_.close(ignored);
    });
  }

  stream_result& result() { return result_; }

 private:
  void read_more() {
    socket_.async_read_some(net::buffer(buffer_.get(), read_buffer_size),
                            [this](const boost::system::error_code& ec, std::size_t n) { on_read(ec, n); });
  }

  void on_read(const boost::system::error_code& ec, std::size_t n) {
    if (n > 0) parser_.feed(buffer_.get(), n, clock_type::now());
    if (!parser_.complete() && !ec) {
      read_more();
      return;
    }
    if (!parser_.complete() && !result_.done) {
      result_.fail(ec == net::error::eof ? std::string("connection closed before done") : "read: " + ec.message());
    }
    // A completed response without done: the stream ended early.
    if (parser_.complete() && !result_.done) result_.fail("response ended without done");
    finish();
  }

  void finish() {
    if (finished_) return;
    finished_ = true;
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    if (shared_->remaining.fetch_sub(1) == 1 && shared_->on_all_finished) shared_->on_all_finished();
  }

  net::strand<net::io_context::executor_type> strand_;
  tcp::socket socket_;
  stream_result result_;
  response_parser parser_;
  std::unique_ptr<char[]> buffer_;
  const std::string* request_ = nullptr;
  run_shared* shared_ = nullptr;
  bool finished_ = false;
};

// ns this thread waited on a run queue (runnable, no CPU free); 0 without schedstats.
std::int64_t thread_runqueue_wait_ns() {
  std::FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (!f) return 0;
  long long on_cpu = 0, waiting = 0;
  const int n = std::fscanf(f, "%lld %lld", &on_cpu, &waiting);
  std::fclose(f);
  return n == 2 ? waiting : 0;
}

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

// ---------------------------------------------------------------------------
// One measurement.

struct stream_run {
  std::string mode;
  double rate = 0;
  unsigned connections = 0;
  unsigned run = 0;
  std::uint64_t streams = 0;
  std::uint64_t errors = 0;
  std::uint64_t events = 0;
  double wall_s = 0;
  double events_per_s = 0;
  double ttft_p50_ms = 0, ttft_p99_ms = 0;
  double ttft_min_ms = 0;
  double done_p50_s = 0;                                      // when half of the streams had their done, from the first POST
  double drift_p50_ms = 0, drift_p99_ms = 0, gap_p99_ms = 0;  // rate mode only
  double first_anchored_p99_ms = 0;  // rate mode: the drift with the schedule anchored at the first token's arrival
  double steady_p99_ms = 0;          // rate mode: the drift of tokens from steady_from_token on
  std::optional<double> server_cpu_s;
  std::optional<double> server_rqwait_s;  // summed over the server's threads
  std::optional<double> peak_rss_mib;
  double client_cpu_s = 0;
  double client_rqwait_s = 0;  // summed over the client's io threads
  std::string first_error;
  std::vector<std::pair<std::size_t, server_process::thread_sample>> threads;  // (creation index, delta)
  bool interrupted = false;
};

std::vector<std::string> create_sessions(const bench_options& options, bench_target& target, unsigned count, double rate) {
  std::string config = R"({"mock":{"tokens":)" + std::to_string(options.tokens);
  if (rate > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", rate);
    config += R"(,"tokens_per_second":)" + std::string(buf);
  }
  config += "}}";
  const std::string body =
      R"({"title":"bench streams","metadata":{"bench":"gateway_bench","scenario":"streams"},"config":)" + config + "}";

  load_options load;
  load.port = target.port;
  load.connections = std::min(count, 16u);
  load.duration = std::chrono::seconds(60);
  load.max_requests = count;
  load.client_threads = 1;
  load.request_timeout = options.request_timeout;
  load.interrupted = target.interrupted;
  std::vector<std::vector<std::string>> created(load.connections);
  auto make = [&body](unsigned, std::uint64_t, bench_request& req) {
    req.method(http::verb::post);
    req.target("/sessions");
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  };
  auto sink = [&created](unsigned conn, const bench_response& res) {
    boost::system::error_code ec;
    auto v = boost::json::parse(res.body(), ec);
    const boost::json::value* id = (!ec && v.is_object()) ? v.as_object().if_contains("id") : nullptr;
    if (id && id->is_string()) created[conn].emplace_back(id->as_string().c_str());
  };
  auto result = run_closed_loop(load, make, sink);
  target.check_alive();
  std::vector<std::string> ids;
  for (auto& c : created) ids.insert(ids.end(), std::make_move_iterator(c.begin()), std::make_move_iterator(c.end()));
  if (ids.size() < count && !(target.interrupted && target.interrupted->load()))
    throw std::runtime_error("created only " + std::to_string(ids.size()) + " of " + std::to_string(count) +
                             " sessions; first error: " + result.first_error);
  return ids;
}

stream_run measure_streams(const bench_options& options, bench_target& target, double rate, unsigned connections,
                           unsigned run_no) {
  stream_run out;
  out.mode = rate_label(rate);
  out.rate = rate;
  out.connections = connections;
  out.run = run_no;

  const auto ids = create_sessions(options, target, connections, rate);
  if (ids.size() < connections) {
    out.interrupted = true;
    return out;
  }

  const unsigned threads = std::max(1u, options.client_threads);
  net::io_context ioc(static_cast<int>(threads));
  const tcp::endpoint endpoint(net::ip::address_v4::loopback(), target.port);
  const std::string host = "127.0.0.1:" + std::to_string(target.port);
  std::vector<std::string> requests(connections);
  for (unsigned i = 0; i < connections; ++i)
    requests[i] = "POST /sessions/" + ids[i] + "/messages HTTP/1.1\r\nHost: " + host +
                  "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: " +
                  std::to_string(message_body.size()) + "\r\n\r\n" + std::string(message_body);

  // Every connection is open before the clock starts.
  std::vector<std::unique_ptr<stream_connection>> conns;
  conns.reserve(connections);
  unsigned connected = 0;
  std::string connect_error;
  for (unsigned i = 0; i < connections; ++i) {
    conns.push_back(std::make_unique<stream_connection>(ioc, options.tokens));
    if (conns.back()->connect(endpoint, connect_error)) ++connected;
  }
  if (connected == 0) throw std::runtime_error("cannot connect to " + host + ": " + connect_error);
  // Connected is not yet accepted: give the server's acceptor a moment, so the
  // first POSTs do not carry the accept of the last connections in their TTFT.
  std::this_thread::sleep_for(std::chrono::milliseconds(100 + connections / 10));

  // A stream is given up after this (counted as an error): a rate-limited run
  // takes about K/R, and a server that stalls must not hang the bench.
  const auto expected = rate > 0 ? std::chrono::duration<double>(options.tokens / rate) : std::chrono::duration<double>(0);
  const auto deadline_after = std::chrono::duration_cast<clock_type::duration>(std::chrono::seconds(60) + expected * 2);

  run_shared shared;
  shared.remaining.store(connections);
  auto watchdog_strand = net::make_strand(ioc);
  net::steady_timer watchdog(watchdog_strand);
  bool all_finished = false;  // watchdog strand only
  shared.on_all_finished = [&] {
    net::post(watchdog_strand, [&] {
      all_finished = true;
      watchdog.cancel();
    });
  };
  clock_type::time_point deadline;
  std::function<void()> arm = [&] {
    watchdog.expires_after(std::chrono::milliseconds(100));
    watchdog.async_wait([&](const boost::system::error_code&) {
      if (all_finished) return;
      const bool stop_now = target.interrupted && target.interrupted->load();
      if (stop_now || clock_type::now() >= deadline) {
        for (auto& c : conns) c->abandon(stop_now ? "interrupted" : "timed out");
        return;
      }
      arm();
    });
  };

  std::vector<server_process::thread_sample> threads_before;
  if (target.server) {
    if (!target.server->reset_peak_rss()) std::printf("  (could not reset the server's VmHWM: peak RSS is cumulative)\n");
    threads_before = target.server->thread_samples();
  }
  const auto cpu_before = target.server_cpu_seconds();
  const double client_before = process_cpu_seconds();
  const auto start = clock_type::now();
  deadline = start + deadline_after;
  for (unsigned i = 0; i < connections; ++i) conns[i]->start(requests[i], shared);
  if (shared.remaining.load() == 0)
    all_finished = true;  // nothing connected: nothing to wait for
  else
    arm();
  // Each client io thread notes how long it sat runnable without a CPU: on a shared
  // machine that delay is in every arrival time the client records.
  std::atomic<std::int64_t> client_wait_ns{0};
  auto run_io = [&ioc, &client_wait_ns] {
    const auto before = thread_runqueue_wait_ns();
    ioc.run();
    client_wait_ns += thread_runqueue_wait_ns() - before;
  };
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back(run_io);
  run_io();
  for (auto& t : pool) t.join();
  out.client_rqwait_s = static_cast<double>(client_wait_ns.load()) / 1e9;
  const auto cpu_after = target.server_cpu_seconds();
  const double client_after = process_cpu_seconds();
  target.check_alive();

  if (cpu_before && cpu_after) out.server_cpu_s = *cpu_after - *cpu_before;
  out.client_cpu_s = client_after - client_before;
  if (target.server) {
    if (auto rss = target.server->peak_rss_kib()) out.peak_rss_mib = static_cast<double>(*rss) / 1024.0;
    double waited = 0;
    out.threads = target.server->thread_use_since(threads_before, waited);
    if (!out.threads.empty()) out.server_rqwait_s = waited;
  }

  latency_recorder ttft, drift, first_anchored, gap, done_at, steady;
  ttft.reserve(connections);
  if (rate > 0) {
    drift.reserve(static_cast<std::size_t>(connections) * options.tokens);
    gap.reserve(static_cast<std::size_t>(connections) * options.tokens);
  }
  clock_type::time_point last_done = start;
  for (auto& c : conns) {
    auto& r = c->result();
    out.streams++;
    out.events += r.events;
    if (r.done && r.tokens.size() != options.tokens)
      r.fail("got " + std::to_string(r.tokens.size()) + " tokens, expected " + std::to_string(options.tokens));
    if (r.failed || !r.done) {
      out.errors++;
      if (out.first_error.empty()) out.first_error = r.error.empty() ? "no done" : r.error;
    }
    if (r.done) {
      last_done = std::max(last_done, r.done_at);
      done_at.record(r.done_at - start);
    }
    if (!r.tokens.empty()) ttft.record(r.first_token - r.sent);
    if (rate > 0 && !r.tokens.empty()) {
      // Token i is due i/R after the first (the server's absolute schedule). Its lateness is
      // measured against the stream's best-delivered token: offset_i = arrival_i - i/R, drift_i
      // = offset_i - min offset. A constant pipeline latency is not drift; a token held back
      // (or a first token delayed by the start burst, which makes every later one look early
      // against a first-token anchor) is. The first-token-anchored figure is printed too.
      auto slot = [rate](std::size_t i) {
        return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(static_cast<double>(i) / rate));
      };
      auto best = r.tokens[0];
      for (std::size_t i = 1; i < r.tokens.size(); ++i) best = std::min(best, r.tokens[i] - slot(i));
      for (std::size_t i = 0; i < r.tokens.size(); ++i) {
        drift.record(r.tokens[i] - slot(i) - best);
        // Past the start: every stream's first tokens share the server with all the other
        // streams' POSTs (they start together); later ones show the steady state.
        if (i >= steady_from_token) steady.record(r.tokens[i] - slot(i) - best);
      }
      for (std::size_t i = 1; i < r.tokens.size(); ++i) {
        const auto due = r.tokens[0] + slot(i);
        first_anchored.record(r.tokens[i] > due ? r.tokens[i] - due : due - r.tokens[i]);
        gap.record(r.tokens[i] - r.tokens[i - 1]);
      }
    }
  }
  out.wall_s = std::chrono::duration<double>(last_done - start).count();
  out.events_per_s = out.wall_s > 0 ? static_cast<double>(out.events) / out.wall_s : 0.0;
  out.ttft_p50_ms = ttft.percentile_us(50) / 1000.0;
  out.ttft_p99_ms = ttft.percentile_us(99) / 1000.0;
  out.ttft_min_ms = ttft.percentile_us(0) / 1000.0;
  out.done_p50_s = done_at.percentile_us(50) / 1e6;
  if (rate > 0) {
    out.drift_p50_ms = drift.percentile_us(50) / 1000.0;
    out.drift_p99_ms = drift.percentile_us(99) / 1000.0;
    out.gap_p99_ms = gap.percentile_us(99) / 1000.0;
    out.first_anchored_p99_ms = first_anchored.percentile_us(99) / 1000.0;
    out.steady_p99_ms = steady.percentile_us(99) / 1000.0;
  }
  out.interrupted = target.interrupted && target.interrupted->load();
  return out;
}

// ---------------------------------------------------------------------------
// Printing.

std::optional<double> us_per_event(const stream_run& r) {
  if (!r.server_cpu_s || r.events == 0) return std::nullopt;
  return *r.server_cpu_s * 1e6 / static_cast<double>(r.events);
}

void print_progress(const stream_run& r) {
  std::printf(
      "  %-6s C=%-4u run %u: %.0f events/s (%llu events in %.3f s, half the streams done at %.3f s), ttft min %.2f "
      "p50 %.2f p99 %.2f ms",
      r.mode.c_str(), r.connections, r.run, r.events_per_s, static_cast<unsigned long long>(r.events), r.wall_s, r.done_p50_s,
      r.ttft_min_ms, r.ttft_p50_ms, r.ttft_p99_ms);
  if (r.rate > 0)
    std::printf(
        ", drift p50 %.2f ms p99 %.2f ms (from token %zu on: p99 %.2f ms; first-token anchor p99 %.2f ms), gap p99 %.2f ms",
        r.drift_p50_ms, r.drift_p99_ms, steady_from_token, r.steady_p99_ms, r.first_anchored_p99_ms, r.gap_p99_ms);
  if (r.server_cpu_s)
    std::printf(", server cpu %.2f s (%s us/event)", *r.server_cpu_s, format_optional(us_per_event(r), "%.2f").c_str());
  if (r.server_rqwait_s) std::printf(", server waited %.2f s for a CPU", *r.server_rqwait_s);
  if (r.peak_rss_mib) std::printf(", peak rss %.1f MiB", *r.peak_rss_mib);
  std::printf(", client cpu %.2f s (waited %.2f s), %llu/%llu errors\n", r.client_cpu_s, r.client_rqwait_s,
              static_cast<unsigned long long>(r.errors), static_cast<unsigned long long>(r.streams));
  if (!r.first_error.empty()) std::printf("    first error: %s\n", r.first_error.c_str());
  server_process::print_thread_use(r.threads);
  std::fflush(stdout);
}

void print_table(std::FILE* out, const std::vector<stream_run>& rows, unsigned tokens) {
  std::fprintf(out,
               "K = %u tokens per stream; times in ms; srv_us/ev = server CPU us per event = CPU s per million events;\n"
               "rss = server VmHWM during the run; *_rqwait = s the server's / client's threads were runnable but got\n"
               "no CPU (a shared machine: large values mean the latencies are the machine's, not the server's)\n",
               tokens);
  std::fprintf(out, "%-6s %5s %-6s %9s %8s %8s %9s %9s %8s %8s %9s %10s %7s %8s %10s %7s %7s\n", "mode", "conns", "run",
               "events/s", "ttft_p50", "ttft_p99", "drift_p50", "drift_p99", "gap_p99", "srv_cpu", "srv_us/ev", "srv_rqwait",
               "rss_MiB", "cli_cpu", "cli_rqwait", "errors", "events");
  auto row = [out](const std::string& mode, unsigned conns, const std::string& run, double eps, double t50, double t99,
                   bool rated, double d50, double d99, double g99, std::optional<double> cpu, std::optional<double> per_ev,
                   std::optional<double> rqwait, std::optional<double> rss, double client, double client_wait, double errors,
                   double events) {
    std::fprintf(out, "%-6s %5u %-6s %9.0f %8.2f %8.2f %9s %9s %8s %8s %9s %10s %7s %8.2f %10.2f %7.0f %7.0f\n", mode.c_str(),
                 conns, run.c_str(), eps, t50, t99, rated ? format_optional(d50, "%.2f").c_str() : "-",
                 rated ? format_optional(d99, "%.2f").c_str() : "-", rated ? format_optional(g99, "%.2f").c_str() : "-",
                 format_optional(cpu, "%.2f").c_str(), format_optional(per_ev, "%.2f").c_str(),
                 format_optional(rqwait, "%.2f").c_str(), format_optional(rss, "%.1f").c_str(), client, client_wait, errors,
                 events);
  };
  std::vector<std::pair<std::string, unsigned>> groups;
  for (const auto& r : rows) {
    std::pair<std::string, unsigned> key{r.mode, r.connections};
    if (std::find(groups.begin(), groups.end(), key) == groups.end()) groups.push_back(key);
  }
  for (const auto& [mode, conns] : groups) {
    std::vector<double> eps, t50, t99, d50, d99, g99, cpu, per_ev, rqwait, rss, client, client_wait, errors, events;
    bool have_cpu = true, have_rqwait = true, have_rss = true, rated = false;
    for (const auto& r : rows) {
      if (r.mode != mode || r.connections != conns) continue;
      rated = r.rate > 0;
      row(mode, conns, std::to_string(r.run), r.events_per_s, r.ttft_p50_ms, r.ttft_p99_ms, rated, r.drift_p50_ms, r.drift_p99_ms,
          r.gap_p99_ms, r.server_cpu_s, us_per_event(r), r.server_rqwait_s, r.peak_rss_mib, r.client_cpu_s, r.client_rqwait_s,
          static_cast<double>(r.errors), static_cast<double>(r.events));
      eps.push_back(r.events_per_s);
      t50.push_back(r.ttft_p50_ms);
      t99.push_back(r.ttft_p99_ms);
      d50.push_back(r.drift_p50_ms);
      d99.push_back(r.drift_p99_ms);
      g99.push_back(r.gap_p99_ms);
      client.push_back(r.client_cpu_s);
      client_wait.push_back(r.client_rqwait_s);
      errors.push_back(static_cast<double>(r.errors));
      events.push_back(static_cast<double>(r.events));
      if (r.server_cpu_s && us_per_event(r)) {
        cpu.push_back(*r.server_cpu_s);
        per_ev.push_back(*us_per_event(r));
      } else {
        have_cpu = false;
      }
      if (r.peak_rss_mib)
        rss.push_back(*r.peak_rss_mib);
      else
        have_rss = false;
      if (r.server_rqwait_s)
        rqwait.push_back(*r.server_rqwait_s);
      else
        have_rqwait = false;
    }
    row(mode, conns, "median", median(eps), median(t50), median(t99), rated, median(d50), median(d99), median(g99),
        have_cpu ? std::optional<double>(median(cpu)) : std::nullopt,
        have_cpu ? std::optional<double>(median(per_ev)) : std::nullopt,
        have_rqwait ? std::optional<double>(median(rqwait)) : std::nullopt,
        have_rss ? std::optional<double>(median(rss)) : std::nullopt, median(client), median(client_wait), median(errors),
        median(events));
  }
}

measurement to_measurement(const stream_run& r) {
  measurement m;
  m.operation = "stream " + r.mode;
  m.connections = r.connections;
  m.run = r.run;
  m.requests_per_s = r.events_per_s;
  m.p50_us = r.ttft_p50_ms * 1000.0;
  m.p99_us = r.ttft_p99_ms * 1000.0;
  m.requests = r.streams;
  m.errors = r.errors;
  m.elapsed_s = r.wall_s;
  m.server_cpu_s = r.server_cpu_s;
  m.client_cpu_s = r.client_cpu_s;
  m.first_error = r.first_error;
  return m;
}

}  // namespace

std::string describe_streams_scenario(const bench_options& options) {
  std::string rates;
  for (double r : options.rates) rates += (rates.empty() ? "" : ", ") + rate_label(r);
  return "C streams of " + std::to_string(options.tokens) + " tokens (rates " + rates + ")";
}

void run_streams_scenario(const bench_options& options, bench_target& target, report& out) {
  unsigned most = 0;
  for (auto c : options.connections) most = std::max(most, c);
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < most + 64)
    std::printf("warning: RLIMIT_NOFILE is %llu, too few for %u connections\n", static_cast<unsigned long long>(files.rlim_cur),
                most);

  auto rows = std::make_shared<std::vector<stream_run>>();
  out.set_table([rows, tokens = options.tokens](std::FILE* f) { print_table(f, *rows, tokens); });

  if (options.warmup_seconds > 0) {
    // Untimed: first runs pay for SQLite's page cache, the allocator and lazily built state.
    const unsigned c = std::min(most, 100u);
    auto warm = measure_streams(options, target, 0.0, c, 0);
    std::printf("  warmup C=%u: %.0f events/s, %llu errors (not reported)\n", c, warm.events_per_s,
                static_cast<unsigned long long>(warm.errors));
  }
  for (double rate : options.rates) {
    for (unsigned connections : options.connections) {
      if (target.interrupted && target.interrupted->load()) return;
      std::printf("%s, connections %u:\n", rate_label(rate).c_str(), connections);
      for (unsigned run = 1; run <= options.repeat; ++run) {
        if (target.interrupted && target.interrupted->load()) return;
        auto r = measure_streams(options, target, rate, connections, run);
        if (r.interrupted) {
          // Streams cut short say nothing about the server: not a measurement, not errors.
          std::printf("  %-6s C=%-4u run %u: interrupted, not reported\n", r.mode.c_str(), connections, run);
          return;
        }
        print_progress(r);
        out.add_quietly(to_measurement(r));
        rows->push_back(std::move(r));
      }
    }
  }
}

}  // namespace agw::bench
