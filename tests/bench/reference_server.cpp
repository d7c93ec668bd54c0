// A calibration reference for issue 10's figures: the smallest server that speaks
// the part of the stream contract `sseload stream`, `idle` and `resume` drive, on
// one thread and one epoll, with no persistence, no routing and no framework. The
// issue quoted such a writer beside its targets; this one is in the tree so that a
// figure can be read as a ratio against it, measured in the same minutes on the same
// machine (tests/bench/reference_ratios.sh). It is a yardstick, not a server: ids
// are small integers, sessions are never freed, and a request it does not know gets
// a 404.
//
//   reference_server [--port N] [--heartbeat SECONDS] [--spread-ms N]
//   (port 0: prints the port chosen)
//
// - POST /sessions {"config":{"mock":{"tokens":K,"tokens_per_second":R}}} -> 201 {"id":"N"}
// - POST /sessions/N/messages -> chunked SSE: K `token` events paced at R a second
//   from the request (R absent or 0: all at once), then `done`. Every token due in a
//   pass goes out in one send, as the gateway coalesces a burst. The token frames
//   have the gateway's shape and size (run id, source, content); the gateway's
//   `status` and `usage` events (two a run) and its larger `done` are left out.
//   With --spread-ms N (default 0; 0 and 1 spread nothing), the Mth run's paced tokens
//   start M mod N ms later than its request: streams that began at independent
//   moments, as real ones do, instead of every run of a load tool's burst sharing the
//   same few milliseconds (which lets one wake serve hundreds of streams;
//   docs/streaming.md). Its time to first event grows by up to N - 1 ms.
// - GET /sessions/N/events -> chunked SSE: a comment at once, then every event the
//   session's runs publish, and a heartbeat comment every --heartbeat seconds (default
//   15). With `Last-Event-ID: M` it first replays the session's events after M from
//   its last 1,024 (a ring, as the gateway's EventBuffer; older ones are not kept and
//   no gap is reported).
//
// Every write is one non-blocking send(); what a full socket does not take waits in
// the connection's buffer for EPOLLOUT, up to 64 MiB, past which the connection is
// cut (the gateway cuts no slow reader: it reads the log for them).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

constexpr std::size_t max_buffered_bytes = 64 << 20;

struct connection;

struct session {
  static constexpr std::size_t kept_events = 1024;
  int tokens = 10;
  double tokens_per_second = 0;
  long last_event_id = 0;
  std::deque<std::string> recent;  // the chunks of events last_event_id - size() + 1 ... last_event_id
  std::vector<connection*> followers;
};

enum class phase { reading, streaming, following };

struct connection {
  int fd = -1;
  phase state = phase::reading;
  std::string in;
  std::string out;  // bytes a full socket did not take yet
  // streaming: the run's session, its id (the gateway's 36-character shape), its next
  // token and its start, from which every token's due time is counted.
  session* run_session = nullptr;
  std::string run_id;
  int next_token = 0;
  clock_type::time_point run_start;
  std::chrono::milliseconds run_phase{0};  // --spread-ms: when its paced tokens start after run_start
  session* followed_session = nullptr;     // following: the session whose followers list names it
  // A connection has at most one timer entry: its next token or its next heartbeat.
  bool timer_pending = false;
  // Closed connections are freed after the epoll pass that closed them (an event later
  // in the pass may still name them), or, with a timer entry, when that entry comes up.
  bool closed = false;
};

struct timer_entry {
  clock_type::time_point due;
  connection* conn;
  bool operator>(const timer_entry& other) const { return due > other.due; }
};

// What serve() needs of a request.
struct request {
  std::string line;  // "POST /sessions HTTP/1.1"
  std::string body;
  std::optional<long> last_event_id;
};

[[noreturn]] void fail(const char* what) {
  std::perror(what);
  std::exit(1);
}

// Single-threaded: every member runs on the thread that calls run().
class reference_server {
 public:
  reference_server(int listen_fd, std::chrono::seconds heartbeat, std::chrono::milliseconds spread)
      : listen_fd_(listen_fd), heartbeat_(heartbeat), spread_(spread) {
    epoll_fd_ = epoll_create1(0);
    if (epoll_fd_ < 0) fail("reference_server: epoll_create1");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;  // nullptr marks the listener
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev) != 0) fail("reference_server: epoll_ctl");
  }

  [[noreturn]] void run() {
    std::vector<epoll_event> events(256);
    for (;;) {
      timespec wait{};
      int n = epoll_pwait2(epoll_fd_, events.data(), static_cast<int>(events.size()), next_wait(wait), nullptr);
      // A failing wait (ENOSYS before Linux 5.11) would spin a core and skew every figure.
      if (n < 0 && errno != EINTR) fail("reference_server: epoll_pwait2");
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
      if (fd < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        if (errno == EINTR || errno == ECONNABORTED) continue;
        fail("reference_server: accept4");  // EMFILE and the like: the listener would spin
      }
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
    if (ready & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) return close_connection(c);
    if ((ready & EPOLLOUT) && !flush(c)) return;
    if (ready & EPOLLIN) read_requests(c);
  }

  void read_requests(connection& c) {
    char buf[4096];
    for (;;) {
      ssize_t got = recv(c.fd, buf, sizeof buf, 0);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return close_connection(c);
      if (got < 0) break;
      c.in.append(buf, static_cast<std::size_t>(got));
    }
    serve_buffered(c);
  }

  // Serves every whole request in c's input while it is between runs.
  void serve_buffered(connection& c) {
    while (c.state == phase::reading && !c.closed) {
      auto head_end = c.in.find("\r\n\r\n");
      if (head_end == std::string::npos) return;
      std::string head = c.in.substr(0, head_end);
      std::string lower = head;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
      std::size_t body_size = static_cast<std::size_t>(std::max(0L, header_number(lower, "content-length:").value_or(0)));
      std::size_t total = head_end + 4 + body_size;
      if (c.in.size() < total) return;
      request r{head.substr(0, head.find("\r\n")), c.in.substr(head_end + 4, body_size), header_number(lower, "last-event-id:")};
      c.in.erase(0, total);
      serve(c, r);
    }
  }

  // A header's number; lower_head is the head in lower case, name too.
  static std::optional<long> header_number(std::string_view lower_head, std::string_view name) {
    auto at = lower_head.find(name);
    if (at == std::string_view::npos) return std::nullopt;
    auto value = lower_head.substr(at + name.size());
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    long n = 0;
    if (std::from_chars(value.data(), value.data() + value.size(), n).ec != std::errc{}) return std::nullopt;
    return n;
  }

  static constexpr std::string_view sse_head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";

  void serve(connection& c, const request& r) {
    std::string_view line = r.line;
    if (line.starts_with("POST /sessions ")) return create_session(c, r.body);
    // "METHOD /sessions/{id}{rest} HTTP/1.1"
    if (auto at = line.find(" /sessions/"); at != std::string_view::npos) {
      auto rest = line.substr(at + 11);
      auto id_end = rest.find('/');
      auto found = id_end == std::string_view::npos ? sessions_.end() : sessions_.find(std::string(rest.substr(0, id_end)));
      if (found != sessions_.end()) {
        rest = rest.substr(id_end);
        if (line.starts_with("POST ") && rest.starts_with("/messages ")) return start_run(c, *found->second);
        if (line.starts_with("GET ") && (rest.starts_with("/events ") || rest.starts_with("/events?")))
          return follow(c, *found->second, r.last_event_id);
      }
    }
    send_or_buffer(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
  }

  void create_session(connection& c, const std::string& body) {
    auto s = std::make_unique<session>();
    boost::system::error_code ec;
    auto doc = boost::json::parse(body, ec);
    if (auto* mock = ec ? nullptr : find_object(doc, "config")) {
      if (auto* m = find_object(*mock, "mock")) {
        if (auto* k = m->as_object().if_contains("tokens"); k && k->is_int64()) s->tokens = static_cast<int>(k->as_int64());
        if (auto* r = m->as_object().if_contains("tokens_per_second"); r && r->is_number())
          s->tokens_per_second = r->to_number<double>();
      }
    }
    std::string id = std::to_string(++last_session_id_);
    sessions_.emplace(id, std::move(s));
    std::string json = "{\"id\":\"" + id + "\"}";
    send_or_buffer(c, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(json.size()) +
                          "\r\n\r\n" + json);
  }

  static const boost::json::value* find_object(const boost::json::value& v, std::string_view key) {
    if (!v.is_object()) return nullptr;
    auto* found = v.as_object().if_contains(key);
    return found && found->is_object() ? found : nullptr;
  }

  void start_run(connection& c, session& s) {
    char run_id[48];
    std::snprintf(run_id, sizeof run_id, "00000000-0000-7000-8000-%012ld", ++last_run_id_);
    c.state = phase::streaming;
    c.run_session = &s;
    c.run_id = run_id;
    c.next_token = 0;
    c.run_start = clock_type::now();
    if (spread_.count() > 0) c.run_phase = std::chrono::milliseconds(last_run_id_ % spread_.count());
    if (send_or_buffer(c, sse_head)) step_run(c);
  }

  void follow(connection& c, session& s, std::optional<long> last_event_id) {
    c.state = phase::following;
    std::string replay = std::string(sse_head) + chunk_of(": connected\n\n");
    if (last_event_id) {
      long first_kept = s.last_event_id - static_cast<long>(s.recent.size()) + 1;
      for (long id = std::max(*last_event_id + 1, first_kept); id <= s.last_event_id; ++id)
        replay += s.recent[static_cast<std::size_t>(id - first_kept)];
    }
    if (!send_or_buffer(c, replay)) return;
    c.followed_session = &s;
    s.followers.push_back(&c);
    schedule(c, clock_type::now() + heartbeat_);
  }

  // Sends every token that is due in one write, then waits for the next one or ends
  // the run with `done`.
  void step_run(connection& c) {
    session& s = *c.run_session;
    const auto now = clock_type::now();
    std::string batch;
    std::optional<clock_type::time_point> next_due;
    while (c.next_token < s.tokens) {
      auto due = token_due(c, c.next_token);
      if (due > now) {
        next_due = due;
        break;
      }
      std::string data = "{\"run_id\":\"" + c.run_id + "\",\"source\":\"ai_agent\",\"content\":\"" +
                         (c.next_token == 0 ? "" : " ") + "tok" + std::to_string(c.next_token) + "\"}";
      batch += new_event(s, "token", data);
      ++c.next_token;
    }
    if (!next_due) batch += new_event(s, "done", "{\"run_id\":\"" + c.run_id + "\",\"source\":\"ai_agent\"}");
    if (!batch.empty()) publish(s, batch);
    if (!next_due) batch += "0\r\n\r\n";
    // Nothing due yet (a run whose --spread-ms phase has not come): no empty send.
    if (!batch.empty() && !send_or_buffer(c, batch)) return;
    if (next_due) return schedule(c, *next_due);
    c.state = phase::reading;
    c.run_session = nullptr;
  }

  clock_type::time_point token_due(const connection& c, int index) const {
    double rate = c.run_session->tokens_per_second;
    if (rate <= 0) return c.run_start;
    return c.run_start + c.run_phase +
           std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(index / rate));
  }

  // The next event of s as a chunk, kept in s's ring for replays.
  static std::string new_event(session& s, std::string_view type, std::string_view data) {
    std::string frame = "id: " + std::to_string(++s.last_event_id) + "\nevent: ";
    frame.append(type).append("\ndata: ").append(data).append("\n\n");
    std::string chunk = chunk_of(frame);
    s.recent.push_back(chunk);
    if (s.recent.size() > session::kept_events) s.recent.pop_front();
    return chunk;
  }

  // Writes a run's chunks to the session's followers. A follower whose send fails is
  // closed, which takes it out of the list: the walk is over a copy.
  void publish(session& s, const std::string& chunks) {
    if (s.followers.empty()) return;
    auto followers = s.followers;
    for (connection* f : followers) send_or_buffer(*f, chunks);
  }

  static std::string chunk_of(std::string_view bytes) {
    char size_line[16];
    auto end = std::to_chars(size_line, size_line + sizeof size_line, bytes.size(), 16).ptr;
    std::string chunk(size_line, end);
    chunk.append("\r\n").append(bytes).append("\r\n");
    return chunk;
  }

  // One send; what the socket does not take waits for EPOLLOUT. False: c was closed.
  bool send_or_buffer(connection& c, std::string_view bytes) {
    if (!c.out.empty()) {
      if (c.out.size() + bytes.size() > max_buffered_bytes) {
        close_connection(c);
        return false;
      }
      c.out.append(bytes);
      return true;
    }
    ssize_t sent = send(c.fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      close_connection(c);
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
        close_connection(c);
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
        serve_buffered(*c);  // a request that came during the run, now that it ended
      } else if (c->state == phase::following) {
        if (send_or_buffer(*c, heartbeat_chunk_)) schedule(*c, now + heartbeat_);
      }
    }
  }

  void close_connection(connection& c) {
    if (c.closed) return;
    c.closed = true;
    if (c.followed_session != nullptr) std::erase(c.followed_session->followers, &c);
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    c.fd = -1;
    if (!c.timer_pending) reap_.push_back(&c);
  }

  void reap() {
    for (auto* c : reap_) delete c;
    reap_.clear();
  }

  int listen_fd_;
  int epoll_fd_ = -1;
  std::chrono::milliseconds heartbeat_;
  std::chrono::milliseconds spread_;
  const std::string heartbeat_chunk_ = chunk_of(": heartbeat\n\n");
  std::priority_queue<timer_entry, std::vector<timer_entry>, std::greater<>> timers_;
  std::unordered_map<std::string, std::unique_ptr<session>> sessions_;
  long last_session_id_ = 0;
  long last_run_id_ = 0;
  std::vector<connection*> reap_;  // closed in this pass, named by no timer entry
};

// A whole number in [low, high] from a flag's value, or nothing.
std::optional<int> flag_number(const char* text, int low, int high) {
  std::string_view s = text;
  int n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc{} || end != s.data() + s.size() || n < low || n > high) return std::nullopt;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  int heartbeat_s = 15;
  int spread_ms = 0;
  for (int i = 1; i < argc; i += 2) {
    std::string_view flag = argv[i];
    std::optional<int> value;
    if (i + 1 < argc && flag == "--port") value = flag_number(argv[i + 1], 0, 65535);
    if (i + 1 < argc && flag == "--heartbeat") value = flag_number(argv[i + 1], 1, 3600);
    if (i + 1 < argc && flag == "--spread-ms") value = flag_number(argv[i + 1], 0, 60000);
    if (!value) {
      std::fprintf(stderr, "usage: reference_server [--port 0-65535] [--heartbeat 1-3600] [--spread-ms 0-60000]\n");
      return 2;
    }
    (flag == "--port" ? port : flag == "--heartbeat" ? heartbeat_s : spread_ms) = *value;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) fail("reference_server: socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 4096) != 0) fail("reference_server: listen");
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::printf("listening on 127.0.0.1:%d\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  reference_server(fd, std::chrono::seconds(heartbeat_s), std::chrono::milliseconds(spread_ms)).run();
}
