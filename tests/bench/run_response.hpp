#pragma once
// The answer to POST /sessions/{id}/messages as a streaming client reads it: the
// HTTP/1.1 response head, the chunked body (or the body up to EOF), the SSE frames
// inside it. Shared by the scenarios that run messages (streams, sustained).
// Responses are parsed in place (string_view over the read buffer); apart from a
// line cut by a read boundary nothing is allocated per frame. Not thread-safe:
// one parser per response, fed by the connection that reads it.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agw::bench {

using clock_type = std::chrono::steady_clock;

// What one stream delivered, filled in by the parser as bytes arrive.
struct stream_result {
  clock_type::time_point sent{};
  clock_type::time_point first_token{};
  clock_type::time_point done_at{};
  std::vector<clock_type::time_point> tokens;  // arrival of every token frame, in order
  std::uint64_t events = 0;                    // dispatched frames (id/event/data blocks)
  bool done = false;
  bool failed = false;
  std::string error;  // the first problem seen

  void fail(std::string why) {
    if (failed) return;
    failed = true;
    error = std::move(why);
  }
};

enum class event_kind : std::uint8_t { other, token, done, error };

// HTTP/1.1 response head, then the chunked body (or, should the server not chunk,
// the body up to EOF), then the SSE lines inside it. Arrival times are per read:
// every frame of one read arrived together.
class response_parser {
 public:
  explicit response_parser(stream_result& result);

  bool complete() const { return phase_ == phase::complete; }

  void feed(const char* p, std::size_t n, clock_type::time_point now);

 private:
  enum class phase { head, size_line, data, data_crlf, trailer, identity, complete };

  // Each takes what it can of [p, end) and returns where it stopped.
  const char* take_head(const char* p, const char* end);
  const char* take_chunk_line(const char* p, const char* end);  // a chunk-size or trailer line
  void stop(std::string why);
  void parse_head();
  void chunk_size(std::string_view l);
  // SSE lines end in \n (the gateway never uses a lone \r); a line cut by a read or
  // chunk boundary is carried in line_.
  void sse(const char* p, std::size_t n, clock_type::time_point now);
  void sse_line(std::string_view l, clock_type::time_point now);
  void dispatch(clock_type::time_point now);

  stream_result& result_;
  phase phase_ = phase::head;
  std::string head_;  // the response head, then chunk-size and trailer lines
  std::uint64_t chunk_left_ = 0;
  int crlf_seen_ = 0;
  std::string line_;  // an SSE line cut by a boundary
  bool frame_open_ = false;
  bool frame_has_id_ = false;
  std::int64_t frame_id_ = 0;
  event_kind kind_ = event_kind::other;
  std::int64_t last_id_ = -1;
  std::string error_data_;
};

}  // namespace agw::bench
