#include "tests/support/webhook_receiver.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <boost/algorithm/string/predicate.hpp>
#include <cstdio>
#include <stdexcept>

namespace agw::test {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 408:
      return "Request Timeout";
    case 410:
      return "Gone";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

// One accepted connection, plain or TLS, with reads bounded by a deadline and the
// receiver's stop flag.
class connection {
 public:
  connection(int fd, SSL* ssl, const std::atomic<bool>& stopping) : fd_(fd), ssl_(ssl), stopping_(stopping) {}
  ~connection() {
    if (ssl_) {
      SSL_shutdown(ssl_);  // sends close_notify; does not wait for the peer's
      SSL_free(ssl_);
    }
    ::close(fd_);
  }

  // > 0 bytes read; 0 at end of stream; -1 on an error, at the deadline, or when the receiver stops.
  long read_some(char* buf, std::size_t size, clock_type::time_point deadline) {
    for (;;) {
      if (stopping_.load()) return -1;
      if (ssl_ && SSL_pending(ssl_) > 0) return tls_read(buf, size);
      if (clock_type::now() >= deadline) return -1;
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, 50);
      if (ready < 0) return -1;
      if (ready == 0) continue;
      if (!ssl_) return ::recv(fd_, buf, size, 0);
      const long n = tls_read(buf, size);
      if (n == -2) continue;  // a TLS record not complete yet (or a non-application record)
      return n;
    }
  }

  bool write_all(std::string_view bytes) {
    while (!bytes.empty()) {
      long n = 0;
      if (ssl_) {
        n = SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()));
      } else {
        n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      }
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

 private:
  long tls_read(char* buf, std::size_t size) {
    const int n = SSL_read(ssl_, buf, static_cast<int>(size));
    if (n > 0) return n;
    const int err = SSL_get_error(ssl_, n);
    if (err == SSL_ERROR_ZERO_RETURN) return 0;
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return -2;
    // A peer that closes the TCP connection without close_notify: treat as the end.
    if (err == SSL_ERROR_SYSCALL) return 0;
    return -1;
  }

  int fd_;
  SSL* ssl_;
  const std::atomic<bool>& stopping_;
};

}  // namespace

std::string received_request::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (boost::algorithm::iequals(k, name)) return v;
  return "";
}

bool received_request::has_header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (boost::algorithm::iequals(k, name)) return true;
  return false;
}

webhook_receiver::webhook_receiver(receiver_reply fallback, std::optional<tls_files> tls) : fallback_(std::move(fallback)) {
  if (tls) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) throw std::runtime_error("SSL_CTX_new failed");
    tls_ctx_ = ctx;
    if (SSL_CTX_use_certificate_chain_file(ctx, tls->cert_pem_path.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, tls->key_pem_path.c_str(), SSL_FILETYPE_PEM) != 1) {
      SSL_CTX_free(ctx);
      throw std::runtime_error("could not load the receiver's certificate or key");
    }
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 64) != 0) {
    ::close(listen_fd_);
    if (tls_ctx_) SSL_CTX_free(static_cast<SSL_CTX*>(tls_ctx_));
    throw std::runtime_error("webhook receiver: bind/listen on 127.0.0.1:0 failed");
  }
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  if (pipe2(wake_pipe_, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  acceptor_ = std::thread([this] { accept_loop(); });
}

webhook_receiver::~webhook_receiver() {
  stopping_ = true;
  char byte = 1;
  [[maybe_unused]] auto n = ::write(wake_pipe_[1], &byte, 1);
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mutex_);
    workers.swap(workers_);
  }
  for (auto& w : workers) w.join();
  ::close(listen_fd_);
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
  if (tls_ctx_) SSL_CTX_free(static_cast<SSL_CTX*>(tls_ctx_));
}

std::string webhook_receiver::url(std::string_view path) const { return url_with_host("127.0.0.1", path); }

std::string webhook_receiver::url_with_host(std::string_view host, std::string_view path) const {
  return std::string(tls_ctx_ ? "https" : "http") + "://" + std::string(host) + ":" + std::to_string(port_) + std::string(path);
}

std::vector<std::string> webhook_receiver::tls_server_names() const {
  std::lock_guard lock(mutex_);
  return server_names_;
}

void webhook_receiver::script(std::vector<receiver_reply> replies) {
  std::lock_guard lock(mutex_);
  for (auto& r : replies) script_.push_back(std::move(r));
}

void webhook_receiver::set_fallback(receiver_reply fallback) {
  std::lock_guard lock(mutex_);
  fallback_ = std::move(fallback);
}

std::size_t webhook_receiver::count() const {
  std::lock_guard lock(mutex_);
  return requests_.size();
}

std::vector<received_request> webhook_receiver::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

received_request webhook_receiver::request(std::size_t index) const {
  std::lock_guard lock(mutex_);
  if (index >= requests_.size())
    throw std::out_of_range("webhook receiver: no request #" + std::to_string(index) + " (" + std::to_string(requests_.size()) +
                            " arrived)");
  return requests_[index];
}

bool webhook_receiver::wait_for(std::size_t n, std::chrono::milliseconds within) const {
  std::unique_lock lock(mutex_);
  return arrived_.wait_for(lock, within, [&] { return requests_.size() >= n; });
}

std::vector<std::string> webhook_receiver::problems() const {
  std::lock_guard lock(mutex_);
  return problems_;
}

receiver_reply webhook_receiver::next_reply(const received_request& req) {
  answer_fn answer;
  {
    std::lock_guard lock(mutex_);
    if (!script_.empty()) {
      auto r = std::move(script_.front());
      script_.pop_front();
      return r;
    }
    if (!answer_) return fallback_;
    answer = answer_;
  }
  return answer(req);  // outside the lock: it may take its time
}

void webhook_receiver::set_answer(answer_fn answer) {
  std::lock_guard lock(mutex_);
  answer_ = std::move(answer);
}

void webhook_receiver::record(received_request r) {
  {
    std::lock_guard lock(mutex_);
    requests_.push_back(std::move(r));
  }
  arrived_.notify_all();
}

void webhook_receiver::accept_loop() {
  for (;;) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) continue;
    if (stopping_.load() || (p[1].revents & POLLIN)) return;
    if (!(p[0].revents & POLLIN)) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++connections_;
    std::lock_guard lock(mutex_);
    workers_.emplace_back([this, fd] { serve(fd); });
  }
}

void webhook_receiver::serve(int fd) {
  // A guard for the blocking parts (the TLS handshake, a TLS record cut in half).
  timeval guard{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &guard, sizeof guard);
  SSL* ssl = nullptr;
  if (tls_ctx_) {
    ssl = SSL_new(static_cast<SSL_CTX*>(tls_ctx_));
    SSL_set_fd(ssl, fd);
    const int accepted = SSL_accept(ssl);
    {
      // Known once the ClientHello is in, also when the client then rejects the certificate.
      const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
      std::lock_guard lock(mutex_);
      server_names_.emplace_back(name ? name : "");
    }
    if (accepted != 1) {
      ++tls_failures_;
      ERR_clear_error();
      SSL_free(ssl);
      ::close(fd);
      return;
    }
  }
  connection conn(fd, ssl, stopping_);

  // The request: head, then a Content-Length body.
  std::string data;
  char buf[16384];
  const auto deadline = clock_type::now() + 10s;
  std::size_t head_end = std::string::npos;
  while ((head_end = data.find("\r\n\r\n")) == std::string::npos) {
    const long n = conn.read_some(buf, sizeof buf, deadline);
    if (n <= 0) return;  // the peer went away before a whole head (e.g. a TLS probe)
    data.append(buf, static_cast<std::size_t>(n));
  }
  received_request req;
  std::string_view head(data.data(), head_end);
  auto line_end = head.find("\r\n");
  std::string_view request_line = head.substr(0, line_end);
  auto sp1 = request_line.find(' ');
  auto sp2 = request_line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1) {
    std::lock_guard lock(mutex_);
    problems_.push_back("bad request line: " + std::string(request_line));
    return;
  }
  req.method = std::string(request_line.substr(0, sp1));
  req.target = std::string(request_line.substr(sp1 + 1, sp2 - sp1 - 1));
  std::string_view rest = line_end == std::string_view::npos ? std::string_view() : head.substr(line_end + 2);
  while (!rest.empty()) {
    auto eol = rest.find("\r\n");
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 2);
    auto colon = line.find(':');
    if (colon == std::string_view::npos) {
      std::lock_guard lock(mutex_);
      problems_.push_back("bad header line: " + std::string(line));
      continue;
    }
    req.headers.emplace_back(std::string(line.substr(0, colon)), trim(line.substr(colon + 1)));
  }
  std::size_t length = 0;
  if (req.has_header("Transfer-Encoding")) {
    std::lock_guard lock(mutex_);
    problems_.push_back("a chunked request body (the gateway should send Content-Length)");
    return;
  }
  if (auto cl = req.header("Content-Length"); !cl.empty()) length = std::stoul(cl);
  std::string body = data.substr(head_end + 4);
  while (body.size() < length) {
    const long n = conn.read_some(buf, sizeof buf, deadline);
    if (n <= 0) break;
    body.append(buf, static_cast<std::size_t>(n));
  }
  if (body.size() != length) {
    std::lock_guard lock(mutex_);
    problems_.push_back("body of " + std::to_string(body.size()) + " bytes, Content-Length " + std::to_string(length));
    return;
  }
  req.body = std::move(body);
  req.arrived = clock_type::now();
  req.arrived_wall = std::chrono::system_clock::now();

  const auto reply = next_reply(req);
  record(std::move(req));

  if (reply.hang) {
    // Say nothing; hold the connection until the gateway gives up on it (or the receiver stops).
    const auto far = clock_type::now() + 60s;
    while (conn.read_some(buf, sizeof buf, far) > 0) {
    }
    return;
  }
  std::string answer = "HTTP/1.1 " + std::to_string(reply.status) + " " + reason_phrase(reply.status) +
                       "\r\nContent-Length: 0\r\nConnection: close\r\n";
  if (reply.retry_after) answer += "Retry-After: " + *reply.retry_after + "\r\n";
  for (const auto& [name, value] : reply.headers) answer += name + ": " + value + "\r\n";
  answer += "\r\n";
  conn.write_all(answer);
}

std::uint16_t refused_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("bind on 127.0.0.1:0 failed");
  }
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::pair<int, std::string> run_shell(const std::string& command) {
  std::string out;
  std::FILE* p = ::popen(command.c_str(), "r");
  if (!p) return {-1, ""};
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  return {::pclose(p), out};
}

}  // namespace agw::test
