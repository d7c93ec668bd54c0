#include "tests/bench/sse_client.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace agw::bench {
namespace {

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

bool starts_with(const char* p, std::size_t n, std::string_view prefix) {
  return n >= prefix.size() && std::memcmp(p, prefix.data(), prefix.size()) == 0;
}

// Decodes a chunked body in place; false when it is malformed.
bool dechunk(std::string& body) {
  std::string out;
  std::size_t at = 0;
  while (true) {
    const auto nl = body.find("\r\n", at);
    if (nl == std::string::npos) return false;
    std::size_t size = 0;
    auto [ptr, ec] = std::from_chars(body.data() + at, body.data() + nl, size, 16);
    if (ec != std::errc()) return false;
    if (size == 0) break;
    if (nl + 2 + size > body.size()) return false;
    out.append(body, nl + 2, size);
    at = nl + 2 + size + 2;
  }
  body = std::move(out);
  return true;
}

}  // namespace

simple_response http_call(std::uint16_t port, std::string_view method, std::string_view target, std::string_view body,
                          std::chrono::milliseconds timeout) {
  simple_response out;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    out.error = std::string("socket: ") + std::strerror(errno);
    return out;
  }
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const auto addr = loopback(port);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    out.error = std::string("connect: ") + std::strerror(errno);
    ::close(fd);
    return out;
  }
  std::string req;
  req.reserve(256 + body.size());
  req.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: 127.0.0.1:").append(std::to_string(port));
  req.append("\r\nConnection: close\r\nAccept: application/json\r\n");
  if (!body.empty() || method == "POST" || method == "PATCH")
    req.append("Content-Type: application/json\r\nContent-Length: ").append(std::to_string(body.size())).append("\r\n");
  req.append("\r\n").append(body);
  for (std::size_t sent = 0; sent < req.size();) {
    auto n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      out.error = std::string("send: ") + std::strerror(errno);
      ::close(fd);
      return out;
    }
    sent += static_cast<std::size_t>(n);
  }
  std::string all;
  char buf[16384];
  while (true) {
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      out.error = std::string("recv: ") + std::strerror(errno);
      ::close(fd);
      return out;
    }
    all.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  const auto head_end = all.find("\r\n\r\n");
  if (head_end == std::string::npos || !all.starts_with("HTTP/1.")) {
    out.error = "no HTTP response head";
    return out;
  }
  out.status = std::atoi(all.c_str() + all.find(' ') + 1);
  std::string head = all.substr(0, head_end);
  for (auto& ch : head) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  out.body = all.substr(head_end + 4);
  if (head.find("transfer-encoding: chunked") != std::string::npos && !dechunk(out.body)) out.error = "bad chunked body";
  return out;
}

std::string create_session(std::uint16_t port, const std::string& body) {
  auto r = http_call(port, "POST", "/sessions", body);
  if (r.status != 201)
    throw std::runtime_error("POST /sessions -> " + std::to_string(r.status) + " " + r.error + r.body.substr(0, 200));
  boost::system::error_code ec;
  auto v = boost::json::parse(r.body, ec);
  const boost::json::value* id = (!ec && v.is_object()) ? v.as_object().if_contains("id") : nullptr;
  if (!id || !id->is_string()) throw std::runtime_error("POST /sessions answered without an id: " + r.body.substr(0, 200));
  return std::string(id->as_string().c_str());
}

void patch_session(std::uint16_t port, const std::string& id, const std::string& body) {
  auto r = http_call(port, "PATCH", "/sessions/" + id, body);
  if (r.status != 200)
    throw std::runtime_error("PATCH /sessions/" + id + " -> " + std::to_string(r.status) + " " + r.error + r.body.substr(0, 200));
}

std::int64_t session_last_event_id(std::uint16_t port, const std::string& id) {
  auto r = http_call(port, "GET", "/sessions/" + id);
  boost::system::error_code ec;
  auto v = boost::json::parse(r.body, ec);
  const boost::json::value* last =
      (r.status == 200 && !ec && v.is_object()) ? v.as_object().if_contains("last_event_id") : nullptr;
  if (!last || !last->is_int64())
    throw std::runtime_error("GET /sessions/" + id + " -> " + std::to_string(r.status) + " " + r.error + r.body.substr(0, 200));
  return last->as_int64();
}

std::optional<double> metric_value(std::uint16_t port, std::string_view name) {
  auto r = http_call(port, "GET", "/metrics");
  if (r.status != 200) return std::nullopt;
  std::string_view text = r.body;
  std::size_t at = 0;
  while (at < text.size()) {
    auto nl = text.find('\n', at);
    auto l = text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    if (l.starts_with(name) && l.size() > name.size() && (l[name.size()] == ' ' || l[name.size()] == '{')) {
      auto sp = l.rfind(' ');
      return std::strtod(std::string(l.substr(sp + 1)).c_str(), nullptr);
    }
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
  return std::nullopt;
}

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

std::int64_t thread_runqueue_wait_ns() {
  std::FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (!f) return 0;
  long long on_cpu = 0, waiting = 0;
  const int n = std::fscanf(f, "%lld %lld", &on_cpu, &waiting);
  std::fclose(f);
  return n == 2 ? waiting : 0;
}

std::optional<long> proc_status_kib(int pid, std::string_view field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string l; std::getline(in, l);)
    if (l.starts_with(field) && l.size() > field.size() && l[field.size()] == ':') return std::atol(l.c_str() + field.size() + 1);
  return std::nullopt;
}

std::optional<long> proc_open_files_limit(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  for (std::string l; std::getline(in, l);)
    if (l.starts_with("Max open files")) return std::atol(l.c_str() + 14);
  return std::nullopt;
}

// ---------------------------------------------------------------------------

sse_fleet::sse_fleet(std::uint16_t port, std::size_t read_buffer_bytes) : port_(port), buffer_(read_buffer_bytes) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
}

sse_fleet::~sse_fleet() {
  close_all();
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

std::size_t sse_fleet::open(std::string request) {
  const std::size_t index = conns_.size();
  conns_.emplace_back();
  auto& c = conns_.back();
  c.request = std::move(request);
  c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c.fd < 0) {
    end(c, std::string("socket: ") + std::strerror(errno));
    return index;
  }
  int one = 1;
  setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const auto addr = loopback(port_);
  if (connect(c.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    end(c, std::string("connect: ") + std::strerror(errno));
    return index;
  }
  epoll_event ev{};
  ev.events = EPOLLOUT | EPOLLIN;
  ev.data.u64 = index;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &ev) != 0) {
    end(c, std::string("epoll_ctl: ") + std::strerror(errno));
    return index;
  }
  return index;
}

void sse_fleet::poll(int timeout_ms) {
  epoll_event events[512];
  const int n = epoll_wait(epoll_fd_, events, 512, timeout_ms);
  for (int i = 0; i < n; ++i) on_ready(static_cast<std::size_t>(events[i].data.u64), events[i].events);
}

void sse_fleet::on_ready(std::size_t index, std::uint32_t events) {
  auto& c = conns_[index];
  if (c.ended()) return;
  if (c.state == sse_conn::phase::connecting || c.state == sse_conn::phase::sending) {
    if (c.state == sse_conn::phase::connecting) {
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        end(c, std::string("connect: ") + std::strerror(err));
        return;
      }
      if (!(events & (EPOLLOUT | EPOLLIN))) return;
      c.state = sse_conn::phase::sending;
    }
    send_request(c, index);
    if (c.ended() || c.state == sse_conn::phase::sending) return;
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_some(c, index);
}

void sse_fleet::send_request(sse_conn& c, std::size_t index) {
  while (c.sent < c.request.size()) {
    auto n = ::send(c.fd, c.request.data() + c.sent, c.request.size() - c.sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // EPOLLOUT again
      end(c, std::string("send: ") + std::strerror(errno));
      return;
    }
    c.sent += static_cast<std::size_t>(n);
  }
  c.state = sse_conn::phase::head;
  std::string().swap(c.request);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = index;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

void sse_fleet::read_some(sse_conn& c, std::size_t) {
  auto n = ::read(c.fd, buffer_.data(), buffer_.size());
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    end(c, std::string("read: ") + std::strerror(errno));
    return;
  }
  if (n == 0) {
    c.eof = true;
    end(c, "closed by the server");
    return;
  }
  ++reads_;
  bytes_read_ += static_cast<std::uint64_t>(n);
  c.bytes += static_cast<std::uint64_t>(n);
  scan(c, buffer_.data(), static_cast<std::size_t>(n), fleet_clock::now());
}

void sse_fleet::scan(sse_conn& c, const char* p, std::size_t n, fleet_clock::time_point now) {
  const char* end_p = p + n;
  if (!c.carry.empty()) {
    // The line cut by the previous read ends in this one (or not yet: a done's data
    // line holds the whole answer and may span many reads).
    const auto* nl = static_cast<const char*>(std::memchr(p, '\n', n));
    if (!nl) {
      c.carry.append(p, n);
      if (c.carry.size() > 64 * 1024 * 1024) end(c, "a line longer than 64 MiB");
      return;
    }
    c.carry.append(p, static_cast<std::size_t>(nl - p));
    line(c, c.carry.data(), c.carry.size(), now);
    if (c.ended()) return;
    if (c.carry.capacity() > 64 * 1024)
      std::string().swap(c.carry);  // a done's long line: give it back
    else
      c.carry.clear();
    p = nl + 1;
  }
  while (p < end_p) {
    const auto* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end_p - p)));
    if (!nl) {
      c.carry.assign(p, static_cast<std::size_t>(end_p - p));
      return;
    }
    line(c, p, static_cast<std::size_t>(nl - p), now);
    if (c.ended()) return;
    p = nl + 1;
  }
}

void sse_fleet::line(sse_conn& c, const char* p, std::size_t n, fleet_clock::time_point now) {
  if (c.state == sse_conn::phase::head) {
    if (c.status == 0) {
      // The status line.
      if (!starts_with(p, n, "HTTP/1.") || n < 12) {
        end(c, "not an HTTP response");
        return;
      }
      std::from_chars(p + 9, p + n, c.status);
      if (c.status != 200) {
        end(c, "status " + std::string(p, n > 80 ? 80 : n));
        return;
      }
      return;
    }
    if (n == 0 || (n == 1 && p[0] == '\r')) {
      c.state = sse_conn::phase::body;
      c.head_seen = true;
      c.head_at = now;
      ++heads_;
    }
    return;
  }
  if (n < 3) return;  // "", "\r": frame ends and chunk ends
  switch (p[0]) {
    case 'i':
      if (p[1] == 'd' && p[2] == ':') {
        std::int64_t id = -1;
        const char* v = p + 3;
        if (v < p + n && *v == ' ') ++v;
        auto [ptr, ec] = std::from_chars(v, p + n, id);
        if (ec != std::errc()) {
          if (!c.id_error) c.error = "an id that is not an integer";
          c.id_error = true;
          return;
        }
        if (c.last_id >= 0 && id != c.last_id + 1 && !c.id_error) {
          c.id_error = true;
          c.error = "id " + std::to_string(id) + " after " + std::to_string(c.last_id);
        }
        if (c.first_id < 0) c.first_id = id;
        c.last_id = id;
        ++c.frames;
        ++window_frames_;
      }
      return;
    case 'e':
      if (starts_with(p, n, "event: done")) {
        if (c.dones++ == 0) ++with_done_;
        c.last_done_id = c.last_id;
        c.last_done_at = now;
      } else if (starts_with(p, n, "event: reconnected")) {
        c.reconnected = true;
      }
      return;
    case ':':
      ++c.heartbeats;
      ++window_heartbeats_;
      return;
    default:
      return;
  }
}

void sse_fleet::end(sse_conn& c, std::string why) {
  if (c.ended()) return;
  if (c.error.empty()) c.error = std::move(why);
  if (c.fd >= 0) {
    ::close(c.fd);  // also leaves the epoll set
    c.fd = -1;
  }
  c.state = sse_conn::phase::ended;
  std::string().swap(c.carry);
  ++ended_;
  if (c.dones == 0) ++ended_no_done_;
}

void sse_fleet::close(std::size_t index) {
  auto& c = conns_[index];
  if (c.ended()) return;
  // A client that leaves on purpose: not an error. Unread data makes the kernel send
  // a RST, so the server's next write fails at once.
  const bool had_error = !c.error.empty();
  end(c, "closed by the client");
  if (!had_error) c.error.clear();
}

void sse_fleet::close_all() {
  for (std::size_t i = 0; i < conns_.size(); ++i) close(i);
}

void sse_fleet::reset_window() {
  for (auto& c : conns_) {
    c.frames = 0;
    c.first_id = -1;
    c.heartbeats = 0;
    c.dones = 0;
    c.last_done_id = -1;
  }
  with_done_ = 0;
  ended_no_done_ = ended_;
  window_frames_ = 0;
  window_heartbeats_ = 0;
}

}  // namespace agw::bench
