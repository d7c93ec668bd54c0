// A calibration reference for the paced, max-rate and idle figures: the smallest
// server that speaks the part of the stream contract `sseload stream` and `sseload
// idle` drive, on one thread and one epoll, with no persistence, no routing and no
// framework. Issue 10 quoted such a writer beside its targets; this one is in the
// tree so that a figure can be read as a ratio against it, measured in the same
// hour on the same machine (tests/bench/reference_ratios.sh). It is a yardstick,
// not a server: ids are small integers, sessions are never freed, and a request it
// does not know gets a 404.
//
//   reference_server [--port N] [--heartbeat SECONDS]   (port 0: prints the port chosen)
//
// - POST /sessions {"config":{"mock":{"tokens":K,"tokens_per_second":R}}} -> 201 {"id":"N"}
// - POST /sessions/N/messages -> chunked SSE: K `token` events paced at R a second
//   from the request (R absent or 0: all at once), then `done`; the connection stays
//   open for the next request, as the gateway's does.
// - GET /sessions/N/events -> chunked SSE: a comment at once, then every event the
//   session's runs publish, and a heartbeat comment every --heartbeat seconds (default
//   15). With `Last-Event-ID: M` it first replays the session's events after M from
//   its last 1,024 (a ring, as the gateway's EventBuffer; older ones are not kept).
//
// Every write is one non-blocking send(); what a full socket does not take waits in
// the connection's buffer for EPOLLOUT, so the stream stays whole.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct connection;

struct session {
  static constexpr std::size_t kept_events = 1024;
  int tokens = 10;
  double tokens_per_second = 0;
  long last_event_id = 0;
  std::deque<std::string> recent;  // the chunks of events last_event_id - size() + 1 ...
  std::vector<connection*> followers;
};

enum class phase { reading, streaming, following };

struct connection {
  int fd = -1;
  phase state = phase::reading;
  std::string in;
  std::string out;                      // bytes a full socket did not take yet
  session* run_session = nullptr;       // streaming: the run's session
  session* followed_session = nullptr;  // following: the session it is in the followers of
  int next_token = 0;
  clock_type::time_point run_start;
  bool timer_pending = false;  // a heap entry names this connection
  bool closed = false;         // freed when its pending timer entry comes up
};

struct timer_entry {
  clock_type::time_point due;
  connection* conn;
  bool operator>(const timer_entry& other) const { return due > other.due; }
};

class reference_server {
 public:
  reference_server(int listen_fd, std::chrono::milliseconds heartbeat) : listen_fd_(listen_fd), heartbeat_(heartbeat) {
    epoll_fd_ = epoll_create1(0);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;  // nullptr marks the listener
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  }

  [[noreturn]] void run() {
    std::vector<epoll_event> events(256);
    for (;;) {
      timespec wait{};
      int n = epoll_pwait2(epoll_fd_, events.data(), static_cast<int>(events.size()), next_wait(wait), nullptr);
      for (int i = 0; i < n; ++i) {
        auto* c = static_cast<connection*>(events[i].data.ptr);
        if (c == nullptr) {
          accept_all();
        } else if (!c->closed) {
          on_ready(*c, events[i].events);
        }
      }
      fire_due_timers();
      reap();
    }
  }

 private:
  // The wait until the next timer (epoll_pwait2 takes nanoseconds). nullptr: none.
  const timespec* next_wait(timespec& wait) const {
    if (timers_.empty()) return nullptr;
    auto left = std::max(timers_.top().due - clock_type::now(), clock_type::duration::zero());
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    wait.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    wait.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    return &wait;
  }

  void accept_all() {
    for (;;) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK);
      if (fd < 0) return;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto* c = new connection;
      c->fd = fd;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.ptr = c;
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    }
  }

  void on_ready(connection& c, std::uint32_t ready) {
    if (ready & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) return close(c);
    if ((ready & EPOLLOUT) && !flush(c)) return;
    if (ready & EPOLLIN) read_requests(c);
  }

  void read_requests(connection& c) {
    char buf[4096];
    for (;;) {
      ssize_t got = recv(c.fd, buf, sizeof buf, 0);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return close(c);
      if (got < 0) break;
      c.in.append(buf, static_cast<std::size_t>(got));
    }
    while (c.state == phase::reading && !c.closed) {
      auto head_end = c.in.find("\r\n\r\n");
      if (head_end == std::string::npos) return;
      std::string_view head(c.in.data(), head_end);
      std::size_t body_size = content_length(head);
      std::size_t total = head_end + 4 + body_size;
      if (c.in.size() < total) return;
      std::string body = c.in.substr(head_end + 4, body_size);
      std::string request_line(head.substr(0, head.find("\r\n")));
      long last_event_id = header_number(head, "Last-Event-ID:");
      c.in.erase(0, total);
      serve(c, request_line, body, last_event_id);
    }
  }

  static std::size_t content_length(std::string_view head) {
    return static_cast<std::size_t>(std::max(0L, header_number(head, "Content-Length:")));
  }

  // A header's number (as the clients here spell the name), or -1.
  static long header_number(std::string_view head, std::string_view name) {
    auto at = head.find(name);
    if (at == std::string_view::npos) return -1;
    auto value = head.substr(at + name.size());
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    long n = -1;
    std::from_chars(value.data(), value.data() + value.size(), n);
    return n;
  }

  void serve(connection& c, std::string_view request_line, const std::string& body, long last_event_id) {
    if (request_line.starts_with("POST /sessions ")) return create_session(c, body);
    session* s = nullptr;
    std::string_view rest;
    if (auto slash = request_line.find("/sessions/"); slash != std::string_view::npos) {
      rest = request_line.substr(slash + 10);
      auto id_end = rest.find('/');
      auto found = sessions_.find(std::string(rest.substr(0, id_end)));
      if (found != sessions_.end() && id_end != std::string_view::npos) {
        s = found->second.get();
        rest = rest.substr(id_end);
      }
    }
    static constexpr std::string_view sse_head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
        "Transfer-Encoding: chunked\r\n\r\n";
    if (s != nullptr && request_line.starts_with("POST ") && rest.starts_with("/messages ")) {
      c.state = phase::streaming;
      c.run_session = s;
      c.next_token = 0;
      c.run_start = clock_type::now();
      if (!write(c, sse_head)) return;
      return step_run(c);
    }
    if (s != nullptr && request_line.starts_with("GET ") && rest.starts_with("/events")) {
      c.state = phase::following;
      if (!write(c, std::string(sse_head) + chunk_of(": connected\n\n"))) return;
      if (last_event_id >= 0) {
        // recent holds ids last_event_id - size() + 1 ... last_event_id.
        long first_kept = s->last_event_id - static_cast<long>(s->recent.size()) + 1;
        for (long id = std::max(last_event_id + 1, first_kept); id <= s->last_event_id; ++id)
          if (!write(c, s->recent[static_cast<std::size_t>(id - first_kept)])) return;
      }
      c.followed_session = s;
      s->followers.push_back(&c);
      return schedule(c, clock_type::now() + heartbeat_);
    }
    write(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
  }

  void create_session(connection& c, const std::string& body) {
    auto s = std::make_unique<session>();
    boost::system::error_code ec;
    auto doc = boost::json::parse(body, ec);
    if (!ec && doc.is_object()) {
      if (auto* mock = doc.as_object().if_contains("config"); mock && mock->is_object()) {
        if (auto* m = mock->as_object().if_contains("mock"); m && m->is_object()) {
          if (auto* k = m->as_object().if_contains("tokens"); k && k->is_int64()) s->tokens = static_cast<int>(k->as_int64());
          if (auto* r = m->as_object().if_contains("tokens_per_second"); r && r->is_number())
            s->tokens_per_second = r->to_number<double>();
        }
      }
    }
    std::string id = std::to_string(++last_session_id_);
    sessions_.emplace(id, std::move(s));
    std::string json = "{\"id\":\"" + id + "\"}";
    write(c, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(json.size()) +
                 "\r\n\r\n" + json);
  }

  // Sends every token that is due, then waits for the next one (or ends the run).
  void step_run(connection& c) {
    session& s = *c.run_session;
    auto now = clock_type::now();
    while (c.next_token < s.tokens) {
      auto due = token_due(c, c.next_token);
      if (due > now) return schedule(c, due);
      std::string data = "{\"text\":\"tok" + std::to_string(c.next_token) + "\"}";
      ++c.next_token;
      if (!write_event(c, "token", data)) return;
    }
    if (!write_event(c, "done", "{}")) return;
    if (!write(c, "0\r\n\r\n")) return;
    c.state = phase::reading;
    c.run_session = nullptr;
  }

  clock_type::time_point token_due(const connection& c, int index) const {
    double rate = c.run_session->tokens_per_second;
    if (rate <= 0) return c.run_start;
    return c.run_start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(index / rate));
  }

  // Writes one event of c's run to c, keeps it and writes it to the session's followers.
  bool write_event(connection& c, std::string_view type, std::string_view data) {
    session& s = *c.run_session;
    std::string frame = "id: " + std::to_string(++s.last_event_id) + "\nevent: ";
    frame.append(type).append("\ndata: ").append(data).append("\n\n");
    std::string chunk = chunk_of(frame);
    // A follower that fails is closed, which takes it out of the list: walk a copy.
    if (!s.followers.empty()) {
      auto followers = s.followers;
      for (connection* f : followers) write(*f, chunk);
    }
    bool written = write(c, chunk);
    s.recent.push_back(std::move(chunk));
    if (s.recent.size() > session::kept_events) s.recent.pop_front();
    return written;
  }

  static std::string chunk_of(std::string_view bytes) {
    char size_line[16];
    auto end = std::to_chars(size_line, size_line + sizeof size_line, bytes.size(), 16).ptr;
    std::string chunk(size_line, end);
    chunk.append("\r\n").append(bytes).append("\r\n");
    return chunk;
  }

  // One send; what the socket does not take waits for EPOLLOUT. False: closed.
  bool write(connection& c, std::string_view bytes) {
    if (!c.out.empty()) {
      c.out.append(bytes);
      return true;
    }
    ssize_t sent = send(c.fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      close(c);
      return false;
    }
    std::size_t taken = sent < 0 ? 0 : static_cast<std::size_t>(sent);
    if (taken < bytes.size()) {
      c.out.assign(bytes.substr(taken));
      watch(c, EPOLLIN | EPOLLRDHUP | EPOLLOUT);
    }
    return true;
  }

  bool flush(connection& c) {
    while (!c.out.empty()) {
      ssize_t sent = send(c.fd, c.out.data(), c.out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      if (sent < 0) {
        close(c);
        return false;
      }
      c.out.erase(0, static_cast<std::size_t>(sent));
    }
    watch(c, EPOLLIN | EPOLLRDHUP);
    return true;
  }

  void watch(connection& c, std::uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = &c;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
  }

  // Deadlines are rounded up to the next whole millisecond, as the gateway's clock
  // does (core::real_clock): every timer due in one millisecond fires in one pass.
  // Without the grid it wakes for nearly every token: a fifth to a third more CPU.
  void schedule(connection& c, clock_type::time_point due) {
    c.timer_pending = true;
    timers_.push({std::chrono::ceil<std::chrono::milliseconds>(due), &c});
  }

  void fire_due_timers() {
    auto now = clock_type::now();
    while (!timers_.empty() && timers_.top().due <= now) {
      connection* c = timers_.top().conn;
      timers_.pop();
      c->timer_pending = false;
      if (c->closed) {
        delete c;
      } else if (c->state == phase::streaming) {
        step_run(*c);
      } else if (c->state == phase::following) {
        if (write(*c, heartbeat_chunk_)) schedule(*c, now + heartbeat_);
      }
    }
  }

  void close(connection& c) {
    if (c.closed) return;
    c.closed = true;
    if (c.followed_session != nullptr) std::erase(c.followed_session->followers, &c);
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    // An event later in this epoll batch may still name it, so it is freed after the
    // pass; a pending timer entry frees it when it comes up.
    if (!c.timer_pending) reap_.push_back(&c);
  }

  void reap() {
    for (auto* c : reap_) delete c;
    reap_.clear();
  }

  int listen_fd_;
  int epoll_fd_;
  std::chrono::milliseconds heartbeat_;
  const std::string heartbeat_chunk_ = chunk_of(": heartbeat\n\n");
  std::priority_queue<timer_entry, std::vector<timer_entry>, std::greater<>> timers_;
  std::unordered_map<std::string, std::unique_ptr<session>> sessions_;
  long last_session_id_ = 0;
  std::vector<connection*> reap_;  // closed in this pass, named by no timer entry
};

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  int heartbeat_s = 15;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string_view flag = argv[i];
    if (flag == "--port")
      port = std::atoi(argv[i + 1]);
    else if (flag == "--heartbeat")
      heartbeat_s = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: reference_server [--port N] [--heartbeat SECONDS]\n");
      return 2;
    }
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 4096) != 0) {
    std::perror("reference_server: listen");
    return 1;
  }
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::printf("listening on 127.0.0.1:%d\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  reference_server(fd, std::chrono::seconds(heartbeat_s)).run();
}
