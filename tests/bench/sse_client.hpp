#pragma once
// Loopback clients for the subscriber scenarios (fanout, idle, resume):
//
// - http_call(): one blocking request (Connection: close) for set-up work:
//   create a session, PATCH its config, read last_event_id or /metrics.
// - sse_fleet: thousands of SSE connections on one thread, one epoll set,
//   level-triggered, one shared 256 KiB read buffer and one read() per ready
//   socket per wake-up. Frames are counted by scanning lines with memchr: a
//   line starting "id: " is a frame (its id is checked to follow the previous
//   one), "event: done" a done, ": heartbeat" a heartbeat. The gateway writes
//   whole frames per HTTP chunk, so chunk-size lines never split an SSE line and
//   are simply ignored; no chunked decoding, no allocation per frame. The only
//   copy is a line cut by a read boundary (carried to the next read; a done's
//   data line holds the whole answer and may span many reads).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agw::bench {

using fleet_clock = std::chrono::steady_clock;

struct simple_response {
  int status = 0;  // 0: no answer (error says why)
  std::string body;
  std::string error;
};

// One request to 127.0.0.1:port over a fresh connection; never throws.
simple_response http_call(std::uint16_t port, std::string_view method, std::string_view target, std::string_view body = {},
                          std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));

// POST /sessions with body; returns the new id or throws std::runtime_error.
std::string create_session(std::uint16_t port, const std::string& body);
// PATCH /sessions/{id} with body; throws unless 200.
void patch_session(std::uint16_t port, const std::string& id, const std::string& body);
// GET /sessions/{id} → last_event_id; throws on failure.
std::int64_t session_last_event_id(std::uint16_t port, const std::string& id);
// One sample of GET /metrics (first line starting with name); nullopt if absent.
std::optional<double> metric_value(std::uint16_t port, std::string_view name);

// This process's CPU (utime + stime of all threads), seconds.
double process_cpu_seconds();
// ns the calling thread sat runnable without a CPU (/proc/thread-self/schedstat).
std::int64_t thread_runqueue_wait_ns();
// A process's VmRSS / VmHWM in KiB from /proc/<pid>/status.
std::optional<long> proc_status_kib(int pid, std::string_view field);
// "Max open files" soft limit of a process, from /proc/<pid>/limits.
std::optional<long> proc_open_files_limit(int pid);

struct sse_conn {
  enum class phase : std::uint8_t { connecting, sending, head, body, ended };
  int fd = -1;
  phase state = phase::connecting;
  std::string request;
  std::size_t sent = 0;
  std::string carry;  // the start of a line cut by a read boundary
  int status = 0;
  bool head_seen = false;
  fleet_clock::time_point head_at{};
  // Per window (reset_window() clears them; last_id is kept so continuity is checked across windows).
  std::uint64_t frames = 0;      // "id: " lines
  std::int64_t first_id = -1;    // first id of the window
  std::int64_t last_id = -1;     // last id ever
  std::uint64_t heartbeats = 0;  // ": heartbeat" lines
  std::uint64_t dones = 0;       // "event: done" lines
  std::int64_t last_done_id = -1;
  fleet_clock::time_point last_done_at{};
  std::uint64_t bytes = 0;
  bool reconnected = false;  // an "event: reconnected" line was seen
  bool id_error = false;
  std::string error;  // the first problem (bad status, id gap, EOF, I/O error)
  bool eof = false;   // the server closed the connection

  bool ended() const { return state == phase::ended; }
};

class sse_fleet {
 public:
  explicit sse_fleet(std::uint16_t port, std::size_t read_buffer_bytes = 256 * 1024);
  ~sse_fleet();
  sse_fleet(const sse_fleet&) = delete;
  sse_fleet& operator=(const sse_fleet&) = delete;

  // Starts a non-blocking connect and queues the request; returns the index.
  // A connection that fails at once (EMFILE, ...) is ended with its error.
  std::size_t open(std::string request);
  // One epoll_wait (up to timeout_ms) and the work on every ready socket.
  void poll(int timeout_ms);
  // Polls until done() or the deadline or *interrupted; true when done() held.
  template <class Pred>
  bool run_until(Pred done, fleet_clock::time_point deadline, const std::atomic<bool>* interrupted = nullptr);
  // Opens count connections with make_request(i), keeping at most max_pending
  // without a response head (so the server's accept backlog never overflows);
  // returns when all have a head or ended, or at the deadline.
  template <class MakeRequest>
  void open_many(std::size_t count, MakeRequest make_request, std::size_t max_pending, fleet_clock::time_point deadline,
                 const std::atomic<bool>* interrupted = nullptr);

  void close(std::size_t index);  // client side; not an error
  void close_all();
  void reset_window();

  std::vector<sse_conn>& conns() { return conns_; }
  const sse_conn& conn(std::size_t i) const { return conns_[i]; }
  std::size_t size() const { return conns_.size(); }
  // Aggregates, kept up to date so run_until predicates are O(1).
  std::size_t heads() const { return heads_; }          // connections that got a response head
  std::size_t ended_count() const { return ended_; }    // closed by either side, or failed
  std::size_t with_done() const { return with_done_; }  // connections with dones >= 1 in this window
  // Connections that got a done in this window or ended without one: size() means all settled.
  std::size_t settled() const { return with_done_ + ended_no_done_; }
  std::uint64_t window_frames() const { return window_frames_; }  // "id: " lines in this window, all connections
  std::uint64_t window_heartbeats() const { return window_heartbeats_; }
  std::uint64_t reads() const { return reads_; }
  std::uint64_t bytes_read() const { return bytes_read_; }

 private:
  void on_ready(std::size_t index, std::uint32_t events);
  void send_request(sse_conn& c, std::size_t index);
  void read_some(sse_conn& c, std::size_t index);
  void scan(sse_conn& c, const char* p, std::size_t n, fleet_clock::time_point now);
  void line(sse_conn& c, const char* p, std::size_t n, fleet_clock::time_point now);
  void end(sse_conn& c, std::string why);

  std::uint16_t port_;
  int epoll_fd_ = -1;
  std::vector<char> buffer_;
  std::vector<sse_conn> conns_;
  std::size_t heads_ = 0;
  std::size_t ended_ = 0;
  std::size_t with_done_ = 0;
  std::size_t ended_no_done_ = 0;
  std::uint64_t window_frames_ = 0;
  std::uint64_t window_heartbeats_ = 0;
  std::uint64_t reads_ = 0;
  std::uint64_t bytes_read_ = 0;
};

template <class Pred>
bool sse_fleet::run_until(Pred done, fleet_clock::time_point deadline, const std::atomic<bool>* interrupted) {
  while (!done()) {
    if (interrupted && interrupted->load(std::memory_order_relaxed)) return false;
    const auto now = fleet_clock::now();
    if (now >= deadline) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    poll(static_cast<int>(std::min<long long>(left + 1, 50)));
  }
  return true;
}

template <class MakeRequest>
void sse_fleet::open_many(std::size_t count, MakeRequest make_request, std::size_t max_pending, fleet_clock::time_point deadline,
                          const std::atomic<bool>* interrupted) {
  std::size_t opened = 0;
  const std::size_t base = conns_.size();
  auto settled = [&] {
    // Connections of this call with a head or ended.
    std::size_t n = 0;
    for (std::size_t i = base; i < conns_.size(); ++i) n += conns_[i].head_seen || conns_[i].ended();
    return n;
  };
  std::size_t settled_now = 0;
  while (opened < count || settled_now < count) {
    if (interrupted && interrupted->load(std::memory_order_relaxed)) return;
    if (fleet_clock::now() >= deadline) return;
    while (opened < count && opened - settled_now < max_pending) {
      open(make_request(opened));
      ++opened;
    }
    poll(10);
    settled_now = settled();
  }
}

}  // namespace agw::bench
