// upstream: the openai provider against tests/fake_upstream. C concurrent runs,
// each a model streaming T tokens at 50 tokens/s, read two ways: straight from
// the fake (POST /v1/chat/completions) and through the gateway (a session on
// the openai provider, POST /sessions/{id}/messages). Every token carries the
// CLOCK_MONOTONIC time the fake wrote it ("t<ns>;"), so each arrival gives that
// token's latency; the gateway's minus the direct one is what the gateway adds.
// Server CPU per upstream token is its CPU over the gateway pass / tokens read.
// The scenario starts its own fake and its own gateway (pointed at the fake).
#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tests/bench/latency_recorder.hpp"
#include "tests/bench/scenario.hpp"
#include "tests/bench/sse_client.hpp"
#include "tests/fake_upstream/fake_upstream_process.hpp"

namespace agw::bench {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

constexpr unsigned tokens_per_second = 50;

std::int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct pass_figures {
  latency_recorder latency;
  std::uint64_t tokens = 0;
  std::uint64_t failed_streams = 0;
};

// Finds every `"content":"t<ns>;"` in what arrived. What is kept for the next read is
// an unfinished stamp, or a tail too short to hold a whole marker: never a counted one.
void take_stamps(std::string& carry, const char* data, std::size_t n, std::int64_t now, pass_figures& out) {
  static const std::string marker = "\"content\":\"t";
  carry.append(data, n);
  std::size_t pos = 0;
  for (;;) {
    const auto at = carry.find(marker, pos);
    if (at == std::string::npos) break;
    const auto end = carry.find(';', at + marker.size());
    if (end == std::string::npos || end + 1 >= carry.size()) {
      carry.erase(0, at);
      return;
    }
    // `;"` closes a token; the done event's whole content ("t…;t…;") is not one.
    if (carry[end + 1] == '"') {
      out.latency.record(std::chrono::nanoseconds(now - std::stoll(carry.substr(at + marker.size(), end - at - marker.size()))));
      ++out.tokens;
    }
    pos = end + 1;
  }
  const auto tail = marker.size() - 1;
  carry.erase(0, std::max(pos, carry.size() > tail ? carry.size() - tail : 0));
}

// One streaming request on its own connection (Connection: close), read to EOF.
net::awaitable<void> read_stream(tcp::endpoint at, std::string request, pass_figures& out) {
  tcp::socket socket(co_await net::this_coro::executor);
  auto [connect_ec] = co_await socket.async_connect(at, net::as_tuple(net::use_awaitable));
  auto [write_ec, written] = co_await net::async_write(socket, net::buffer(request), net::as_tuple(net::use_awaitable));
  if (connect_ec || write_ec) {
    ++out.failed_streams;
    co_return;
  }
  std::string carry;
  char buffer[16 * 1024];
  for (;;) {
    auto [ec, n] = co_await socket.async_read_some(net::buffer(buffer), net::as_tuple(net::use_awaitable));
    if (n > 0) take_stamps(carry, buffer, n, monotonic_ns(), out);
    if (ec) break;
  }
}

std::string post(std::string_view target, const std::string& body) {
  return "POST " + std::string(target) +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// All requests at once, on one client thread; returns when every stream ended.
pass_figures run_pass(std::uint16_t port, const std::vector<std::pair<std::string, std::string>>& requests) {
  net::io_context io(1);
  pass_figures out;
  const tcp::endpoint at(net::ip::make_address("127.0.0.1"), port);
  for (const auto& [target, body] : requests) net::co_spawn(io, read_stream(at, post(target, body), out), net::detached);
  io.run();
  return out;
}

std::string model_for(unsigned tokens) { return "tokens:n=" + std::to_string(tokens) + ",rate=50,stamp=1"; }

struct row {
  unsigned runs;
  double direct_p50_us, direct_p99_us, gateway_p50_us, gateway_p99_us;
  std::uint64_t tokens;
  std::optional<double> cpu_us_per_token;
  std::uint64_t failed;
};

row measure(unsigned runs, unsigned tokens, std::uint16_t fake_port, server_process& gateway) {
  std::vector<std::pair<std::string, std::string>> direct, through;
  const std::string chat =
      R"({"model":")" + model_for(tokens) + R"(","stream":true,"messages":[{"role":"user","content":"go"}]})";
  for (unsigned i = 0; i < runs; ++i) {
    direct.emplace_back("/v1/chat/completions", chat);
    const auto sid = create_session(gateway.port(), R"({"config":{"provider":"openai","model":")" + model_for(tokens) + R"("}})");
    through.emplace_back("/sessions/" + sid + "/messages", R"({"content":"go"})");
  }
  auto d = run_pass(fake_port, direct);
  const auto cpu_before = gateway.cpu_seconds_precise();
  auto g = run_pass(gateway.port(), through);
  const auto cpu_after = gateway.cpu_seconds_precise();
  row r{runs,
        d.latency.percentile_us(50),
        d.latency.percentile_us(99),
        g.latency.percentile_us(50),
        g.latency.percentile_us(99),
        g.tokens,
        std::nullopt,
        d.failed_streams + g.failed_streams + (runs * tokens - g.tokens)};
  if (cpu_before && cpu_after && g.tokens > 0)
    r.cpu_us_per_token = (*cpu_after - *cpu_before) * 1e6 / static_cast<double>(g.tokens);
  return r;
}

void print_rows(std::FILE* out, const std::vector<row>& rows) {
  std::fprintf(out, "\nper-token latency, fake write -> client read (us); added = gateway - direct\n");
  std::fprintf(out, "%6s %10s %10s %10s %10s %10s %10s %9s %12s %7s\n", "runs", "direct50", "direct99", "gw50", "gw99", "added50",
               "added99", "tokens", "cpu_us/tok", "missed");
  for (const auto& r : rows)
    std::fprintf(out, "%6u %10.0f %10.0f %10.0f %10.0f %10.0f %10.0f %9llu %12s %7llu\n", r.runs, r.direct_p50_us,
                 r.direct_p99_us, r.gateway_p50_us, r.gateway_p99_us, r.gateway_p50_us - r.direct_p50_us,
                 r.gateway_p99_us - r.direct_p99_us, static_cast<unsigned long long>(r.tokens),
                 format_optional(r.cpu_us_per_token, "%.1f").c_str(), static_cast<unsigned long long>(r.failed));
}

}  // namespace

std::string describe_upstream_scenario(const bench_options& options) {
  const unsigned tokens = options.tokens_given ? options.tokens : 100;
  return std::to_string(tokens) + " tokens per run at 50 tokens/s, direct from the fake and through the gateway";
}

void run_upstream_scenario(const bench_options& options, bench_target& target, report& out) {
  const unsigned tokens = options.tokens_given ? options.tokens : 100;
  const auto& counts = options.connections;  // the scenario's default: 1,100,1000
  test::fake_upstream_process fake;
  auto env = options.server_env;
  env["GATEWAY_OPENAI_BASE_URL"] = "http://127.0.0.1:" + std::to_string(fake.port()) + "/v1";
  server_process gateway(options.binary, env);
  // Shared with the table printer, which runs after this function returned.
  auto rows = std::make_shared<std::vector<row>>();
  out.set_table([rows](std::FILE* f) { print_rows(f, *rows); });
  for (unsigned runs : counts) {
    if (target.interrupted && target.interrupted->load()) break;
    rows->push_back(measure(runs, tokens, fake.port(), gateway));
    const auto& r = rows->back();
    std::printf("upstream %u runs: added p50 %.0f us, p99 %.0f us; %s us CPU per token\n", runs,
                r.gateway_p50_us - r.direct_p50_us, r.gateway_p99_us - r.direct_p99_us,
                format_optional(r.cpu_us_per_token, "%.1f").c_str());
    std::fflush(stdout);
    measurement m;
    m.operation = "upstream";
    m.connections = runs;
    m.run = 1;
    m.requests = r.tokens;
    m.errors = r.failed;
    out.add_quietly(m);
  }
}

}  // namespace agw::bench
