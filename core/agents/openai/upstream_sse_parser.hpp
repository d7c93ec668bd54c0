#pragma once
// The upstream's Server-Sent Events, taken apart as the bytes arrive: feed()
// any split of the stream and the same messages come out as for the whole.
// Follows the SSE grammar: lines end in CRLF, LF or CR (a CR at the end of one
// piece and an LF at the start of the next are one line end); lines starting
// with ':' are comments (keep-alive pings); `data:` lines join with '\n'; a
// blank line dispatches. Only `event` and `data` matter to a model stream.
// Not thread-safe: one parser per upstream response, on the run's strand.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace agw::core::openai {

struct sse_message {
  std::string event;  // empty: the default "message"
  std::string data;
  bool operator==(const sse_message&) const = default;
};

class upstream_sse_parser {
 public:
  // A line longer than this ends the stream with a protocol error (a broken
  // upstream must not grow our memory without bound).
  static constexpr std::size_t default_max_line = 8 * 1024 * 1024;
  explicit upstream_sse_parser(std::size_t max_line = default_max_line) : max_line_(max_line) {}

  // Appends the messages `bytes` completes to `out`; false once a line was too long.
  bool feed(std::string_view bytes, std::vector<sse_message>& out);
  // End of the body: a message that had data but no blank line after it is
  // dispatched too (some servers end the stream right after the last line).
  void finish(std::vector<sse_message>& out);
  bool failed() const { return failed_; }

 private:
  void take_line(std::string_view line, std::vector<sse_message>& out);
  void dispatch(std::vector<sse_message>& out);

  std::size_t max_line_;
  std::string line_;       // the current line so far (no terminator)
  bool after_cr_ = false;  // the last byte was a CR: an LF next is part of that line end
  bool has_data_ = false;  // a data field arrived since the last dispatch
  sse_message pending_;
  bool failed_ = false;
};

}  // namespace agw::core::openai
