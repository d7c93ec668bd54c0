#pragma once
// Closed-loop HTTP/1.1 load over keep-alive connections: each of C connections
// sends its next request as soon as the previous answer is in, so C is the
// number of requests in flight. Closed loop (rather than a fixed arrival rate)
// is what "C concurrent clients" means and never overloads the 2-core box the
// benchmark shares with the server.
#include <atomic>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "tests/bench/latency_recorder.hpp"

namespace agw::bench {

namespace http = boost::beast::http;
using bench_request = http::request<http::string_body>;
using bench_response = http::response<http::string_body>;

struct load_options {
  std::uint16_t port = 0;  // on 127.0.0.1, always
  unsigned connections = 1;
  std::chrono::duration<double> duration{5.0};  // upper bound even when max_requests is set
  std::uint64_t max_requests = 0;               // 0: only the duration ends the run
  unsigned client_threads = 1;
  std::chrono::milliseconds request_timeout{5000};
  const std::atomic<bool>* interrupted = nullptr;  // Ctrl-C: stop issuing, finish in-flight
};

// Fills method, target, body and content headers of the seq-th request of a
// connection; the driver adds Host, keep-alive and Content-Length.
using request_factory = std::function<void(unsigned connection, std::uint64_t seq, bench_request& req)>;
// Sees every 2xx response, on the thread running that connection; connections
// never share a call concurrently with themselves, so per-connection state needs no lock.
using response_sink = std::function<void(unsigned connection, const bench_response& res)>;

// Called on the driver's thread with every connection already established:
// on_start right before the clock starts, on_end right after the last answer.
// Scenarios sample server CPU here so connection set-up is not in the figure.
struct load_hooks {
  std::function<void()> on_start;
  std::function<void()> on_end;
};

struct load_result {
  latency_recorder latencies;  // successful (2xx) requests only
  std::uint64_t ok = 0;
  std::uint64_t http_errors = 0;  // answered, but not 2xx
  std::uint64_t io_errors = 0;    // connect, write, read, timeout, closed mid-request
  double elapsed_s = 0.0;         // first request sent → last answer received
  double client_cpu_s = 0.0;      // this process (all threads) during the run
  std::string first_error;        // one example, so a failing run says why

  std::uint64_t errors() const { return http_errors + io_errors; }
  std::uint64_t requests() const { return ok + errors(); }
  double requests_per_s() const { return elapsed_s > 0 ? static_cast<double>(ok) / elapsed_s : 0.0; }
};

// Throws std::runtime_error when not even one connection can be opened.
load_result run_closed_loop(const load_options& options, const request_factory& make_request, const response_sink& on_response,
                            const load_hooks& hooks = {});

}  // namespace agw::bench
