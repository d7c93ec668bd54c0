#pragma once
// A real HTTP (or HTTPS) server on 127.0.0.1, port 0, inside the test process:
// the target of the gateway's completion callbacks. Each request it receives is
// recorded (method, target, headers, raw body, arrival time) and answered from
// a script: a status (with an optional Retry-After), or no answer at all (the
// connection is held open until the peer gives up, to trigger the gateway's
// timeout). Accessors are thread-safe; every wait has a deadline.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace agw::test {

struct received_request {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;  // as received, in order
  std::string body;                                          // the exact body bytes
  std::chrono::steady_clock::time_point arrived;             // when the whole request was in
  std::chrono::system_clock::time_point arrived_wall;

  // The value of the first header named `name` (case-insensitive), "" when absent.
  std::string header(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

// How the receiver answers one request.
struct receiver_reply {
  int status = 200;
  std::optional<std::string> retry_after;                    // a Retry-After header value
  bool hang = false;                                         // never answer; hold the connection open
  std::vector<std::pair<std::string, std::string>> headers;  // more response headers (e.g. Location)

  static receiver_reply with_status(int status, std::optional<std::string> retry_after = std::nullopt) {
    return {status, std::move(retry_after), false, {}};
  }
  static receiver_reply no_answer() { return {0, std::nullopt, true, {}}; }
};

// PEM files for an HTTPS receiver.
struct tls_files {
  std::string cert_pem_path;
  std::string key_pem_path;
};

class webhook_receiver {
 public:
  // Listens at once on 127.0.0.1, port 0. Requests beyond the script get `fallback`.
  explicit webhook_receiver(receiver_reply fallback = {}, std::optional<tls_files> tls = std::nullopt);
  ~webhook_receiver();
  webhook_receiver(const webhook_receiver&) = delete;
  webhook_receiver& operator=(const webhook_receiver&) = delete;

  std::uint16_t port() const { return port_; }
  // "http://127.0.0.1:<port><path>" (https when TLS).
  std::string url(std::string_view path = "/hook") const;
  // The same with another host name for the URL (e.g. "localhost", which resolves to 127.0.0.1).
  std::string url_with_host(std::string_view host, std::string_view path = "/hook") const;

  // Appends answers for the next requests, in order.
  void script(std::vector<receiver_reply> replies);
  void set_fallback(receiver_reply fallback);
  // Answers every request the script does not by calling `answer` (on the request's own
  // connection thread, before the request is recorded; it may sleep to hold the answer).
  using answer_fn = std::function<receiver_reply(const received_request&)>;
  void set_answer(answer_fn answer);

  std::size_t count() const;
  std::vector<received_request> requests() const;
  received_request request(std::size_t index) const;  // throws when there is no such request
  // True when at least `n` requests have arrived within `within`.
  bool wait_for(std::size_t n, std::chrono::milliseconds within) const;

  std::size_t connections() const { return connections_.load(); }
  std::size_t tls_handshake_failures() const { return tls_failures_.load(); }
  // The SNI host name each TLS connection's ClientHello carried ("" when none), in
  // order of arrival, handshakes that failed included.
  std::vector<std::string> tls_server_names() const;
  // Requests that could not be parsed (no Content-Length, bad head...): should stay empty.
  std::vector<std::string> problems() const;

 private:
  void accept_loop();
  void serve(int fd);
  receiver_reply next_reply(const received_request& req);
  void record(received_request r);

  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::uint16_t port_ = 0;
  void* tls_ctx_ = nullptr;  // SSL_CTX*, when TLS
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> connections_{0};
  std::atomic<std::size_t> tls_failures_{0};

  mutable std::mutex mutex_;
  mutable std::condition_variable arrived_;
  std::deque<receiver_reply> script_;
  receiver_reply fallback_;
  answer_fn answer_;
  std::vector<received_request> requests_;
  std::vector<std::string> problems_;
  std::vector<std::string> server_names_;
  std::vector<std::thread> workers_;  // one per connection; joined by the destructor
  std::thread acceptor_;
};

// A loopback port that was bound and then closed: connecting to it is refused.
std::uint16_t refused_loopback_port();

// Runs a shell command line; returns {exit status, stdout}. For the openssl CLI.
std::pair<int, std::string> run_shell(const std::string& command);

}  // namespace agw::test
