// Scenario "sessions": the REST hot path without runs. POST /sessions is a write
// through the store executor (one SQLite writer); GET /sessions/{id} is a read of
// a session created earlier. They are measured separately so a regression in one
// path is not hidden by the other.
#include <atomic>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/bench/http_load.hpp"
#include "tests/bench/scenario.hpp"

namespace agw::bench {
namespace {

// splitmix64: a stateless spread of (connection, seq) over the id pool, so
// connections do not walk the pool in lock-step and need no shared RNG.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct timed_load {
  load_result result;
  std::optional<double> server_cpu_s;
};

timed_load measure(const bench_options& options, bench_target& target, unsigned connections, double seconds,
                   std::uint64_t max_requests, const request_factory& make, const response_sink& sink) {
  load_options load;
  load.port = target.port;
  load.connections = connections;
  load.duration = std::chrono::duration<double>(seconds);
  load.max_requests = max_requests;
  load.client_threads = options.client_threads;
  load.request_timeout = options.request_timeout;
  load.interrupted = target.interrupted;

  std::optional<double> before;
  std::optional<double> after;
  load_hooks hooks{[&] { before = target.server_cpu_seconds(); }, [&] { after = target.server_cpu_seconds(); }};
  timed_load out{run_closed_loop(load, make, sink, hooks), std::nullopt};
  target.check_alive();
  if (before && after) out.server_cpu_s = *after - *before;
  return out;
}

measurement to_measurement(std::string op, unsigned connections, unsigned run, timed_load& t) {
  measurement m;
  m.operation = std::move(op);
  m.connections = connections;
  m.run = run;
  m.requests_per_s = t.result.requests_per_s();
  m.p50_us = t.result.latencies.percentile_us(50);
  m.p99_us = t.result.latencies.percentile_us(99);
  m.requests = t.result.requests();
  m.errors = t.result.errors();
  m.elapsed_s = t.result.elapsed_s;
  m.server_cpu_s = t.server_cpu_s;
  m.client_cpu_s = t.result.client_cpu_s;
  m.first_error = t.result.first_error;
  return m;
}

// Runs POST /sessions and appends every created id to pool.
timed_load create_sessions(const bench_options& options, bench_target& target, unsigned connections, double seconds,
                           std::uint64_t max_requests, const std::string& tag, std::vector<std::string>& pool) {
  std::vector<std::vector<std::string>> created(connections);
  std::atomic<std::uint64_t> missing_ids{0};
  auto make = [&tag](unsigned conn, std::uint64_t seq, bench_request& req) {
    const auto c = std::to_string(conn);
    const auto s = std::to_string(seq);
    req.method(http::verb::post);
    req.target("/sessions");
    req.set(http::field::content_type, "application/json");
    req.body() = R"({"title":"bench )" + tag + " " + c + "-" + s + R"(","metadata":{"bench":"gateway_bench","phase":")" + tag +
                 R"(","connection":")" + c + R"(","seq":")" + s + R"("}})";
  };
  auto sink = [&created, &missing_ids](unsigned conn, const bench_response& res) {
    boost::system::error_code ec;
    auto v = boost::json::parse(res.body(), ec);
    const boost::json::value* id = (!ec && v.is_object()) ? v.as_object().if_contains("id") : nullptr;
    if (id && id->is_string())
      created[conn].emplace_back(id->as_string().c_str());
    else
      missing_ids.fetch_add(1, std::memory_order_relaxed);
  };
  auto t = measure(options, target, connections, seconds, max_requests, make, sink);
  if (missing_ids.load() > 0)
    std::printf("  warning: %llu create answers carried no string \"id\"\n", static_cast<unsigned long long>(missing_ids.load()));
  for (auto& ids : created) pool.insert(pool.end(), std::make_move_iterator(ids.begin()), std::make_move_iterator(ids.end()));
  return t;
}

timed_load get_sessions(const bench_options& options, bench_target& target, unsigned connections, double seconds,
                        std::uint64_t max_requests, const std::vector<std::string>& pool) {
  auto make = [&pool](unsigned conn, std::uint64_t seq, bench_request& req) {
    const auto& id = pool[mix((static_cast<std::uint64_t>(conn) << 40) ^ seq) % pool.size()];
    req.method(http::verb::get);
    req.target("/sessions/" + id);
  };
  return measure(options, target, connections, seconds, max_requests, make, {});
}

}  // namespace

void run_sessions_scenario(const bench_options& options, bench_target& target, report& out) {
  // With --requests the count ends a measurement, but a minute still bounds it.
  const double seconds = options.requests ? 60.0 : options.seconds;
  std::vector<std::string> pool;  // every session created so far: the GETs' targets
  for (unsigned connections : options.connections) {
    if (target.interrupted && target.interrupted->load()) break;
    std::printf("connections %u:\n", connections);
    if (options.warmup_seconds > 0) {
      // Untimed: fills the SQLite page cache and the allocator before the first figure.
      auto warm = create_sessions(options, target, connections, options.warmup_seconds, 0, "warmup", pool);
      std::printf("  warmup C=%-4u: %.1f req/s, %llu errors (not reported)\n", connections, warm.result.requests_per_s(),
                  static_cast<unsigned long long>(warm.result.errors()));
    }
    for (unsigned run = 1; run <= options.repeat; ++run) {
      if (target.interrupted && target.interrupted->load()) break;
      const std::string tag = "c" + std::to_string(connections) + "r" + std::to_string(run);
      auto created = create_sessions(options, target, connections, seconds, options.requests, tag, pool);
      out.add(to_measurement("create", connections, run, created));
      if (target.interrupted && target.interrupted->load()) break;  // keep the partial run, start no other
      if (pool.empty()) {
        // Nothing to read back: seed a few so the GET figure exists at all.
        create_sessions(options, target, 1, 5.0, 100, "seed", pool);
        if (pool.empty()) throw std::runtime_error("no session could be created; cannot measure GET /sessions/{id}");
      }
      auto got = get_sessions(options, target, connections, seconds, options.requests, pool);
      out.add(to_measurement("get", connections, run, got));
    }
  }
  std::printf("sessions created by this bench: %zu\n", pool.size());
}

}  // namespace agw::bench
