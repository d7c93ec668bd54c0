#include "tests/support/http_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/algorithm/string/predicate.hpp>
#include <boost/json/parse.hpp>
#include <stdexcept>

namespace agw::test {

std::string http_reply::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (boost::algorithm::iequals(k, name)) return v;
  return "";
}

boost::json::value http_reply::json() const { return boost::json::parse(body); }

http_client::http_client(std::uint16_t port, std::chrono::milliseconds timeout, int receive_buffer) : timeout_(timeout) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  // Before connect(), so that the handshake already advertises the small window and MSS.
  if (receive_buffer > 0) {
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    int mss = 536;
    setsockopt(fd_, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof mss);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd_);
    throw std::runtime_error("connect to 127.0.0.1:" + std::to_string(port) + " failed");
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

http_client::~http_client() {
  if (fd_ >= 0) close(fd_);
}

void http_client::send_raw(std::string_view bytes) {
  while (!bytes.empty()) {
    auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("send failed");
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

bool http_client::fill(std::chrono::milliseconds wait) {
  if (eof_) return false;
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(wait.count())) <= 0) return false;
  char buf[16384];
  auto n = ::recv(fd_, buf, sizeof buf, 0);
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  buffer_.append(buf, static_cast<std::size_t>(n));
  return true;
}

std::string http_client::read_line(std::chrono::milliseconds wait) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    auto pos = buffer_.find("\r\n");
    if (pos != std::string::npos) {
      std::string line = buffer_.substr(0, pos);
      buffer_.erase(0, pos + 2);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !fill(left)) throw std::runtime_error("timed out or closed while reading a line");
  }
}

std::string http_client::read_exact(std::size_t n, std::chrono::milliseconds wait) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  while (buffer_.size() < n) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !fill(left)) throw std::runtime_error("timed out or closed while reading a body");
  }
  std::string out = buffer_.substr(0, n);
  buffer_.erase(0, n);
  return out;
}

http_reply http_client::read_head() {
  http_reply reply;
  std::string status_line = read_line(timeout_);
  if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.")) throw std::runtime_error("bad status line: " + status_line);
  reply.status = std::stoi(status_line.substr(9, 3));
  for (std::string line; !(line = read_line(timeout_)).empty();) {
    auto colon = line.find(':');
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    reply.headers.emplace_back(line.substr(0, colon), value);
  }
  return reply;
}

std::optional<std::string> http_client::read_chunk(std::chrono::milliseconds wait) {
  std::string size_line;
  try {
    size_line = read_line(wait);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::size_t size = std::stoul(size_line, nullptr, 16);
  if (size == 0) {
    read_line(wait);  // the blank line after the last chunk
    return std::nullopt;
  }
  std::string data = read_exact(size, wait);
  read_line(wait);
  return data;
}

http_reply http_client::read_reply() {
  http_reply reply;
  do {
    reply = read_head();
  } while (reply.status == 100);
  if (boost::algorithm::iequals(reply.header("Transfer-Encoding"), "chunked")) {
    while (auto chunk = read_chunk(timeout_)) reply.body += *chunk;
  } else if (auto len = reply.header("Content-Length"); !len.empty()) {
    reply.body = read_exact(std::stoul(len), timeout_);
  } else if (reply.status != 204 && reply.status != 304) {
    while (fill(timeout_)) {
    }
    reply.body = std::move(buffer_);
    buffer_.clear();
  }
  return reply;
}

std::string http_client::read_some(std::chrono::milliseconds wait) {
  if (buffer_.empty()) fill(wait);
  std::string out = std::move(buffer_);
  buffer_.clear();
  return out;
}

bool http_client::closed_by_peer(std::chrono::milliseconds wait) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  while (!eof_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    if (!fill(left) && !eof_) return false;
  }
  return true;
}

http_reply http_client::request(std::string_view method, std::string_view target, std::string_view body,
                                const header_list& headers) {
  std::string req = std::string(method) + " " + std::string(target) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST" || method == "PATCH" || method == "PUT")
    req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n";
  req += body;
  send_raw(req);
  return read_reply();
}

http_reply http_call(std::uint16_t port, std::string_view method, std::string_view target, std::string_view body,
                     const header_list& headers) {
  http_client client(port);
  return client.request(method, target, body, headers);
}

}  // namespace agw::test
