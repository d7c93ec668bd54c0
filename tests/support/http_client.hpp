#pragma once
// A deliberately small HTTP/1.1 client over a raw loopback socket, so tests
// control every byte sent and see every byte received (SSE framing, chunking).
// Every read has a deadline: a test fails, never hangs.
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace agw::test {

using header_list = std::vector<std::pair<std::string, std::string>>;

struct http_reply {
  int status = 0;
  header_list headers;
  std::string body;                                 // de-chunked
  std::string header(std::string_view name) const;  // "" when absent (case-insensitive)
  boost::json::value json() const;
};

class http_client {
 public:
  // receive_buffer > 0 makes a small TCP window for slow-reader tests: SO_RCVBUF and a small
  // MSS (TCP_MAXSEG 536) are set before connecting. The MSS matters on loopback: its 64 KiB
  // MSS lets the server's send buffer autotune to megabytes, which would hide a stalled reader.
  explicit http_client(std::uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(10), int receive_buffer = 0);
  ~http_client();
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  void send_raw(std::string_view bytes);
  // Reads one whole response (Content-Length, chunked, or until close).
  http_reply read_reply();
  // Reads the status line and headers only; the body can then be streamed with read_chunk_data.
  http_reply read_head();
  // Raw bytes as they arrive, up to the deadline; "" at end of stream.
  std::string read_some(std::chrono::milliseconds wait);
  // For chunked streams: the next chunk's payload; nullopt at the last chunk or end of stream.
  std::optional<std::string> read_chunk(std::chrono::milliseconds wait);
  // True when the server closed the connection (reads EOF within `wait`).
  bool closed_by_peer(std::chrono::milliseconds wait);

  http_reply request(std::string_view method, std::string_view target, std::string_view body = {},
                     const header_list& headers = {{"Content-Type", "application/json"}});

 private:
  bool fill(std::chrono::milliseconds wait);  // appends to buffer_; false on EOF/timeout
  std::string read_line(std::chrono::milliseconds wait);
  std::string read_exact(std::size_t n, std::chrono::milliseconds wait);
  int fd_ = -1;
  std::chrono::milliseconds timeout_;
  std::string buffer_;
  bool eof_ = false;
};

// One request on a fresh connection.
http_reply http_call(std::uint16_t port, std::string_view method, std::string_view target, std::string_view body = {},
                     const header_list& headers = {{"Content-Type", "application/json"}});

}  // namespace agw::test
