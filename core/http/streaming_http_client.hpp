#pragma once
// The outbound HTTP client a provider reads an upstream (a model's streaming
// API) with. core defines it; gateway/http/beast_streaming_client implements it
// with Beast. One request per exchange: open() connects, sends the request and
// reads the status line and headers; then read_some() pulls the body piece by
// piece as the bytes arrive (chunked transfer encoding already undone).
//
// Why a pull (an awaitable read_some) and not a chunk callback: the provider
// reads only when it is ready for more (after pacing, run_context::pace()), so a run
// that storage holds back holds back the upstream through TCP flow control
// instead of a queue growing in the client; the provider's parsing stays
// straight-line code on the session strand with no re-entrancy; and
// cancellation is Asio's own (below), not a flag a callback must check.
//
// Errors never throw: they come back as an error_code of streaming_http_errc
// (plus a detail string for the log line), so a provider maps them to the
// contract's upstream_* codes in one place.
//
// Cancellation, two ways, both ending the pending operation at once with
// streaming_http_errc::cancelled and every later one too:
// - exchange->cancel(), on the exchange's executor;
// - per-operation (terminal) cancellation of the awaitable open()/read_some(),
//   e.g. racing it with the run's abortable sleep:
//     auto reading = exchange->read_some();
//     auto aborted = ctx.sleep_until(std::chrono::steady_clock::time_point::max());
//     auto either = std::move(reading) || std::move(aborted);   // awaitable_operators
//     auto outcome = co_await std::move(either);
//   When the run is aborted the sleep returns first and the read is cancelled.
//   An implementation checks for it after every step, so a step that ignores
//   cancellation (a name lookup) delays it at most until that step returns.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace agw::core {

using http_header_list = std::vector<std::pair<std::string, std::string>>;

struct streaming_request {
  std::string method = "POST";
  std::string url;  // absolute http:// or https://
  // Host, Content-Length (when there is a body) and Connection: close are set by the client.
  http_header_list headers;
  std::string body;
  // Resolve + TCP connect + TLS handshake, together.
  std::chrono::milliseconds connect_timeout{10'000};
  // The longest silence after connecting: while sending the request, waiting for
  // the response header, and between any two pieces of the body. A model that
  // streams is never cut for the length of its answer, only for stalling.
  std::chrono::milliseconds idle_timeout{60'000};
};

struct streaming_response_head {
  int status = 0;
  http_header_list headers;  // in arrival order, names as the server spelled them
  // The first header of that name (ASCII case-insensitive), or nullptr.
  const std::string* find(std::string_view name) const;
};

enum class streaming_http_errc {
  bad_url = 1,      // not an absolute http(s) URL
  resolve_failed,   // the host has no address
  connect_failed,   // every address refused or unreachable
  tls_failed,       // handshake or certificate verification failed
  connect_timeout,  // connect_timeout passed before the connection was ready
  idle_timeout,     // idle_timeout passed without a byte
  cancelled,        // cancel() or the awaitable's cancellation
  connection_lost,  // the peer closed or reset before the response was complete
  protocol_error,   // not a valid HTTP/1.1 response (bad header, bad chunking, headers too large)
  misuse,           // read_some() before a successful open(), or open() twice
};

const boost::system::error_category& streaming_http_category();
inline boost::system::error_code make_error_code(streaming_http_errc e) {
  return {static_cast<int>(e), streaming_http_category()};
}

struct open_result {
  boost::system::error_code error;  // streaming_http_errc; empty when the head arrived
  std::string detail;               // the transport's own words, for the log line
};

struct body_read {
  boost::system::error_code error;  // streaming_http_errc; empty on success
  std::string detail;
  std::string data;  // the bytes that arrived, in order; empty only with `end` or an error
  bool end = false;  // the body is complete (nothing more to read)
};

// One request and its response. Not thread-safe: every method runs on the
// executor it was prepared with (the session's strand, for a provider), and at
// most one open()/read_some() is pending at a time. The awaiting coroutine keeps
// the exchange alive (it holds the shared_ptr).
class streaming_http_exchange {
 public:
  virtual ~streaming_http_exchange() = default;
  // Connects, sends the request, reads the status line and headers. Once.
  virtual boost::asio::awaitable<open_result> open() = 0;
  // Valid after open() succeeded; any status (a 4xx/5xx body is readable too).
  virtual const streaming_response_head& head() const = 0;
  // The next piece of the body as soon as some bytes of it arrive.
  virtual boost::asio::awaitable<body_read> read_some() = 0;
  // Stops whatever is pending and closes the connection; later calls fail with cancelled.
  virtual void cancel() = 0;
};

// Makes exchanges. Implementations are thread-safe (shared by every session).
class streaming_http_client {
 public:
  virtual ~streaming_http_client() = default;
  // Nothing is sent until open(); the exchange's I/O runs on `executor`.
  virtual std::shared_ptr<streaming_http_exchange> prepare(boost::asio::any_io_executor executor, streaming_request request) = 0;
};

}  // namespace agw::core

namespace boost::system {
template <>
struct is_error_code_enum<agw::core::streaming_http_errc> : std::true_type {};
}  // namespace boost::system
