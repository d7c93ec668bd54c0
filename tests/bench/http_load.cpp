#include "tests/bench/http_load.hpp"

#include <sys/resource.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace agw::bench {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
using clock_type = std::chrono::steady_clock;

constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

// What one connection accumulates; merged into load_result after the run.
struct connection_state {
  unsigned index = 0;
  latency_recorder latencies;
  std::uint64_t ok = 0;
  std::uint64_t http_errors = 0;
  std::uint64_t io_errors = 0;
  std::string first_error;
  std::unique_ptr<beast::tcp_stream> stream;

  void note_error(std::string what) {
    if (first_error.empty()) first_error = std::move(what);
  }
};

// Shared by all connections of one run; read-only apart from the atomics.
struct run_control {
  const load_options& options;
  const request_factory& make_request;
  const response_sink& on_response;
  tcp::endpoint endpoint;
  clock_type::time_point deadline;
  std::atomic<std::uint64_t> issued{0};

  bool should_stop() {
    if (options.interrupted && options.interrupted->load(std::memory_order_relaxed)) return true;
    if (clock_type::now() >= deadline) return true;
    if (options.max_requests && issued.fetch_add(1, std::memory_order_relaxed) >= options.max_requests) return true;
    return false;
  }
};

void close_stream(beast::tcp_stream& stream) {
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream.socket().close(ignored);
}

net::awaitable<void> connection_loop(run_control& run, connection_state& state) {
  auto& stream = *state.stream;
  beast::flat_buffer buffer;
  const std::string host = "127.0.0.1:" + std::to_string(run.endpoint.port());
  for (std::uint64_t seq = 0; !run.should_stop(); ++seq) {
    if (!stream.socket().is_open()) {
      // The server closed (or we gave up on) the previous connection: reconnect,
      // and count a failure so a server that keeps refusing shows up as errors.
      buffer.clear();
      stream.expires_after(run.options.request_timeout);
      auto [cec] = co_await stream.async_connect(run.endpoint, use_tuple);
      if (cec) {
        state.io_errors++;
        state.note_error("connect: " + cec.message());
        close_stream(stream);
        net::steady_timer pause(stream.get_executor(), std::chrono::milliseconds(10));
        co_await pause.async_wait(use_tuple);
        continue;
      }
      beast::error_code ignored;
      stream.socket().set_option(tcp::no_delay(true), ignored);
    }

    bench_request req;
    req.version(11);
    req.set(http::field::host, host);
    run.make_request(state.index, seq, req);
    req.keep_alive(true);
    req.prepare_payload();

    const auto start = clock_type::now();
    stream.expires_after(run.options.request_timeout);
    auto [wec, wn] = co_await http::async_write(stream, req, use_tuple);
    if (wec) {
      state.io_errors++;
      state.note_error("write: " + wec.message());
      close_stream(stream);
      continue;
    }
    bench_response res;
    auto [rec, rn] = co_await http::async_read(stream, buffer, res, use_tuple);
    const auto end = clock_type::now();
    if (rec) {
      state.io_errors++;
      state.note_error("read: " + rec.message());
      close_stream(stream);
      continue;
    }
    const unsigned status = res.result_int();
    if (status >= 200 && status < 300) {
      state.ok++;
      state.latencies.record(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start));
      if (run.on_response) run.on_response(state.index, res);
    } else {
      state.http_errors++;
      state.note_error(std::string(req.method_string()) + " " + std::string(req.target()) + " -> " + std::to_string(status) +
                       " " + res.body().substr(0, 200));
    }
    if (!res.keep_alive()) close_stream(stream);
  }
  stream.expires_never();
  close_stream(stream);
}

}  // namespace

load_result run_closed_loop(const load_options& options, const request_factory& make_request, const response_sink& on_response,
                            const load_hooks& hooks) {
  const unsigned threads = std::max(1u, options.client_threads);
  net::io_context ioc(static_cast<int>(threads));
  run_control run{options, make_request, on_response, tcp::endpoint(net::ip::address_v4::loopback(), options.port), {}, {}};

  // Connect everyone before the clock starts: the figures are about requests,
  // not about the TCP handshake (each connection is reused for the whole run).
  std::vector<connection_state> states(options.connections);
  unsigned connected = 0;
  std::string connect_error;
  for (unsigned i = 0; i < options.connections; ++i) {
    auto& state = states[i];
    state.index = i;
    // A strand per connection: with two client threads, a stream's timer and its
    // I/O completions must not run at the same time (beast::tcp_stream requires it).
    state.stream = std::make_unique<beast::tcp_stream>(net::make_strand(ioc));
    beast::error_code ec;
    state.stream->socket().connect(run.endpoint, ec);
    if (ec) {
      connect_error = ec.message();
      beast::error_code ignored;
      state.stream->socket().close(ignored);
      continue;
    }
    state.stream->socket().set_option(tcp::no_delay(true), ec);
    ++connected;
  }
  if (connected == 0)
    throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(options.port) + ": " + connect_error);
  for (auto& state : states) state.latencies.reserve(4096);

  std::mutex failure_mutex;
  std::exception_ptr failure;
  if (hooks.on_start) hooks.on_start();
  const double cpu_before = process_cpu_seconds();
  const auto start = clock_type::now();
  run.deadline = start + std::chrono::duration_cast<clock_type::duration>(options.duration);
  for (auto& state : states) {
    net::co_spawn(state.stream->get_executor(), connection_loop(run, state), [&](std::exception_ptr e) {
      if (!e) return;
      std::lock_guard lock(failure_mutex);
      if (!failure) failure = e;
    });
  }
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : pool) t.join();
  const auto end = clock_type::now();
  const double cpu_after = process_cpu_seconds();
  if (hooks.on_end) hooks.on_end();
  if (failure) std::rethrow_exception(failure);

  load_result result;
  result.elapsed_s = std::chrono::duration<double>(end - start).count();
  result.client_cpu_s = cpu_after - cpu_before;
  for (auto& state : states) {
    result.ok += state.ok;
    result.http_errors += state.http_errors;
    result.io_errors += state.io_errors;
    result.latencies.merge(state.latencies);
    if (result.first_error.empty()) result.first_error = state.first_error;
  }
  // Connections that could not be opened up front are failures too.
  result.io_errors += options.connections - connected;
  if (result.first_error.empty() && connected < options.connections) result.first_error = "connect: " + connect_error;
  return result;
}

}  // namespace agw::bench
