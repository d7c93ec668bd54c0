#pragma once
// Header-only helpers for the runs_* integration tests: a strict incremental
// SSE parser, an HTTP/1.1 chunked decoder that checks every byte of the
// framing, a stream reader over http_client with bounded waits, and small
// REST helpers (sessions, messages, the contract's error body, sqlite3 CLI).
//
// Everything lives in agw::test::runs so it never collides with helpers of
// other suites linked into the same executable.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/session_fixtures.hpp"

namespace agw::test::runs {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// ---------------------------------------------------------------------------
// Small value helpers.

inline std::string str(const boost::json::value& v) { return std::string(v.as_string()); }

// A JSON string value, for comparing JSON with std::string in CHECKs.
inline boost::json::value jstr(std::string_view s) { return boost::json::value(boost::json::string(s)); }

// Shared with the sessions tests.
using fixtures::is_uuid;
using fixtures::try_json;

// ---------------------------------------------------------------------------
// HTTP/1.1 chunked transfer coding, decoded byte by byte with its framing checked.

class chunk_decoder {
 public:
  // Feeds raw bytes; returns the payload bytes decoded from them.
  std::string feed(std::string_view bytes) {
    std::string out;
    buf_.append(bytes);
    for (;;) {
      if (state_ == state::size_line) {
        auto eol = buf_.find("\r\n");
        if (eol == std::string::npos) break;
        std::string line = buf_.substr(0, eol);
        buf_.erase(0, eol + 2);
        auto semi = line.find(';');
        std::string hex = line.substr(0, semi);
        if (hex.empty() || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
          problems.push_back("bad chunk size line '" + line + "'");
          state_ = state::broken;
          break;
        }
        remaining_ = std::stoul(hex, nullptr, 16);
        if (remaining_ == 0) {
          state_ = state::trailer;
        } else {
          state_ = state::data;
          sizes.push_back(remaining_);
        }
      } else if (state_ == state::data) {
        if (buf_.empty()) break;
        std::size_t n = std::min(remaining_, buf_.size());
        out.append(buf_, 0, n);
        buf_.erase(0, n);
        remaining_ -= n;
        if (remaining_ == 0) state_ = state::data_end;
      } else if (state_ == state::data_end) {
        if (buf_.size() < 2) break;
        if (buf_.compare(0, 2, "\r\n") != 0) {
          problems.push_back("chunk data not followed by CRLF");
          state_ = state::broken;
          break;
        }
        buf_.erase(0, 2);
        state_ = state::size_line;
      } else if (state_ == state::trailer) {
        auto eol = buf_.find("\r\n");
        if (eol == std::string::npos) break;
        std::string line = buf_.substr(0, eol);
        buf_.erase(0, eol + 2);
        if (line.empty()) state_ = state::finished;
      } else {
        break;
      }
    }
    if (state_ == state::finished && !buf_.empty()) {
      extra_after_end += buf_;
      buf_.clear();
    }
    return out;
  }
  bool finished() const { return state_ == state::finished; }
  bool broken() const { return state_ == state::broken; }

  std::vector<std::size_t> sizes;     // every non-empty chunk's size, in order
  std::vector<std::string> problems;  // framing violations
  std::string extra_after_end;        // bytes after the last chunk (a pipelined response would be here)

 private:
  enum class state { size_line, data, data_end, trailer, finished, broken } state_ = state::size_line;
  std::string buf_;
  std::size_t remaining_ = 0;
};

// ---------------------------------------------------------------------------
// A strict incremental parser of the contract's SSE wire format.

struct sse_frame {
  std::optional<std::int64_t> id;  // absent for `reconnected`
  std::string event;
  std::string data_text;    // the data line as sent
  boost::json::value data;  // parsed data (null when not JSON)
  bool data_is_json = false;
  std::vector<std::string> fields;  // field names in the order they came
  std::string raw;                  // the exact frame text, blank line included
  clock_type::time_point received;  // when the frame completed at the client

  const boost::json::object& obj() const {
    static const boost::json::object empty;
    return data.is_object() ? data.get_object() : empty;
  }
  std::string field(std::string_view key) const {
    auto* v = obj().if_contains(key);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
  }
};

class sse_parser {
 public:
  void feed(std::string_view bytes) {
    body.append(bytes);
    line_buf_.append(bytes);
    // Lines are cut from a moving start and the buffer compacted once: large reads stay linear.
    std::size_t start = 0;
    for (;;) {
      auto nl = line_buf_.find('\n', start);
      if (nl == std::string::npos) break;
      std::string line = line_buf_.substr(start, nl - start);
      start = nl + 1;
      on_line(line);
    }
    line_buf_.erase(0, start);
  }

  // True when a frame or a line is still incomplete.
  bool partial() const { return !line_buf_.empty() || pending_.has_value(); }

  std::optional<std::string> retry;  // the value of the retry: line
  bool retry_first = false;          // the retry line was the body's first line
  std::vector<sse_frame> frames;
  std::vector<std::size_t> heartbeat_at;  // frames.size() when each heartbeat line came
  std::vector<std::string> problems;      // every deviation from the contract's format
  std::string body;                       // every byte of the de-chunked body

  std::vector<const sse_frame*> of_type(std::string_view type) const {
    std::vector<const sse_frame*> out;
    for (const auto& f : frames)
      if (f.event == type) out.push_back(&f);
    return out;
  }
  std::size_t count(std::string_view type) const { return of_type(type).size(); }
  const sse_frame* first(std::string_view type) const {
    for (const auto& f : frames)
      if (f.event == type) return &f;
    return nullptr;
  }
  const sse_frame* last(std::string_view type) const {
    for (auto it = frames.rbegin(); it != frames.rend(); ++it)
      if (it->event == type) return &*it;
    return nullptr;
  }
  bool has_done() const { return first("done") != nullptr; }
  std::string tokens() const {
    std::string out;
    for (const auto& f : frames)
      if (f.event == "token") out += f.field("content");
    return out;
  }
  std::vector<std::string> event_types() const {
    std::vector<std::string> out;
    for (const auto& f : frames) out.push_back(f.event);
    return out;
  }
  std::int64_t last_id() const {
    for (auto it = frames.rbegin(); it != frames.rend(); ++it)
      if (it->id) return *it->id;
    return 0;
  }

 private:
  void on_line(const std::string& line) {
    ++lines_;
    if (line.find('\r') != std::string::npos) problems.push_back("CR inside a line: " + line);
    if (line.empty()) {
      if (!pending_) {
        problems.push_back("a blank line outside a frame (line " + std::to_string(lines_) + ")");
        return;
      }
      finish();
      return;
    }
    if (line.front() == ':') {
      if (line != ": heartbeat") problems.push_back("unexpected comment line '" + line + "'");
      if (pending_) problems.push_back("a comment inside a frame");
      heartbeat_at.push_back(frames.size());
      return;
    }
    auto colon = line.find(':');
    std::string name = line.substr(0, colon);
    std::string value;
    if (colon == std::string::npos) {
      problems.push_back("a field line without ':' '" + line + "'");
    } else if (line.compare(colon, 2, ": ") != 0) {
      problems.push_back("field '" + name + "' not followed by ': '");
      value = line.substr(colon + 1);
    } else {
      value = line.substr(colon + 2);
    }
    if (name == "retry") {
      if (pending_) problems.push_back("retry inside a frame");
      if (retry) problems.push_back("a second retry line");
      if (lines_ == 1) retry_first = true;
      if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)
        problems.push_back("retry value is not an integer: '" + value + "'");
      retry = value;
      return;
    }
    if (!pending_) {
      pending_.emplace();
      pending_->raw.clear();
    }
    pending_->raw += line + "\n";
    pending_->fields.push_back(name);
    if (name == "id") {
      if (pending_->id) problems.push_back("two id lines in one frame");
      if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) {
        problems.push_back("id is not a decimal integer: '" + value + "'");
      } else {
        pending_->id = std::stoll(value);
      }
    } else if (name == "event") {
      if (!pending_->event.empty()) problems.push_back("two event lines in one frame");
      pending_->event = value;
    } else if (name == "data") {
      if (!pending_->data_text.empty()) problems.push_back("two data lines in one frame (data must be one line)");
      pending_->data_text = value;
    } else {
      problems.push_back("unknown field '" + name + "'");
    }
  }

  void finish() {
    sse_frame f = std::move(*pending_);
    pending_.reset();
    f.raw += "\n";
    f.received = clock_type::now();
    if (auto v = try_json(f.data_text)) {
      f.data = std::move(*v);
      f.data_is_json = true;
    } else {
      problems.push_back("data is not JSON: " + f.data_text.substr(0, 200));
    }
    // The contract's frame: id, event, data in that order (reconnected: event, data).
    const bool numbered = f.event != "reconnected";
    const std::vector<std::string> want =
        numbered ? std::vector<std::string>{"id", "event", "data"} : std::vector<std::string>{"event", "data"};
    if (f.fields != want) {
      std::string got;
      for (const auto& n : f.fields) got += n + " ";
      problems.push_back("frame fields out of shape: " + got);
    }
    if (!f.data.is_object()) problems.push_back("data is not a JSON object: " + f.data_text.substr(0, 200));
    frames.push_back(std::move(f));
  }

  std::string line_buf_;
  std::optional<sse_frame> pending_;
  std::size_t lines_ = 0;
};

// ---------------------------------------------------------------------------
// One HTTP exchange whose answer may be an SSE stream.

class sse_reader {
 public:
  explicit sse_reader(std::uint16_t port, int receive_buffer = 0)
      : client_(std::make_unique<http_client>(port, 15s, receive_buffer)) {}

  // Sends the request and reads the status line and headers. A non-chunked
  // answer (an error) has its body read at once into `head.body`.
  void send(std::string_view method, const std::string& target, std::string_view body, const header_list& headers) {
    send_only(method, target, body, headers);
    read_head_now();
  }

  // The two halves of send(), for tests that put several requests on the wire first.
  void send_only(std::string_view method, const std::string& target, std::string_view body, const header_list& headers) {
    std::string req = std::string(method) + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    bool has_length = false;
    for (const auto& [k, v] : headers) {
      req += k + ": " + v + "\r\n";
      if (k == "Content-Length") has_length = true;
    }
    if (!has_length && (!body.empty() || method == "POST")) req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    req += "\r\n";
    req += body;
    client_->send_raw(req);
  }

  void read_head_now() {
    // The head is read byte by byte too, so a test can check the exact status line.
    std::string acc;
    const auto deadline = clock_type::now() + 15s;
    std::size_t end = std::string::npos;
    while ((end = acc.find("\r\n\r\n")) == std::string::npos) {
      if (clock_type::now() >= deadline) throw std::runtime_error("no response head within 15 s: " + acc);
      std::string bytes = client_->read_some(200ms);
      if (bytes.empty() && client_->closed_by_peer(0ms)) throw std::runtime_error("connection closed before the head: " + acc);
      acc += bytes;
    }
    head_text = acc.substr(0, end + 4);
    std::string rest = acc.substr(end + 4);
    parse_head();
    chunked = head.header("Transfer-Encoding") == "chunked";
    if (chunked) {
      raw += rest;
      parser.feed(decoder.feed(rest));
      if (decoder.finished() || decoder.broken()) ended = true;
      return;
    }
    auto len = head.header("Content-Length");
    const std::size_t want = len.empty() ? 0 : std::stoul(len);
    while (rest.size() < want && clock_type::now() < deadline) {
      std::string bytes = client_->read_some(200ms);
      if (bytes.empty() && client_->closed_by_peer(0ms)) break;
      rest += bytes;
    }
    head.body = rest.substr(0, std::min(want, rest.size()));
    ended = true;
  }

  std::string status_line() const { return head_text.substr(0, head_text.find("\r\n")); }

  // Reads whatever arrives within `wait`; false when nothing came (timeout, end or EOF).
  bool pump(std::chrono::milliseconds wait) {
    if (ended || !client_) return false;
    std::string bytes = client_->read_some(wait);
    if (bytes.empty()) {
      if (client_->closed_by_peer(0ms)) eof = true;
      return false;
    }
    raw += bytes;
    parser.feed(decoder.feed(bytes));
    if (decoder.finished() || decoder.broken()) ended = true;
    return true;
  }

  // Reads until `done(parser)` holds or `total` elapses; returns whether it holds.
  bool read_until(const std::function<bool(const sse_parser&)>& done, std::chrono::milliseconds total = 20s) {
    const auto deadline = clock_type::now() + total;
    while (!done(parser)) {
      if (ended || eof) return done(parser);
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
      if (left.count() <= 0) return false;
      pump(std::min(left, std::chrono::milliseconds(500)));
    }
    return true;
  }

  // Reads to the last chunk; true when the response ended cleanly within `total`.
  bool read_to_end(std::chrono::milliseconds total = 20s) {
    read_until([this](const sse_parser&) { return ended; }, total);
    return ended && decoder.finished();
  }

  // Closes the connection (a client that goes away).
  void disconnect() { client_.reset(); }

  http_client& client() { return *client_; }

  http_reply head;
  std::string head_text;  // status line and headers exactly as received
  bool chunked = false;
  bool ended = false;  // last chunk seen (or a non-chunked answer read)
  bool eof = false;    // the server closed the connection
  std::string raw;     // raw bytes of the chunked body as received
  chunk_decoder decoder;
  sse_parser parser;

 private:
  void parse_head() {
    std::string_view rest = head_text;
    auto line_end = rest.find("\r\n");
    std::string status = std::string(rest.substr(0, line_end));
    if (!status.starts_with("HTTP/1.") || status.size() < 12) throw std::runtime_error("bad status line: " + status);
    head.status = std::stoi(status.substr(9, 3));
    rest.remove_prefix(line_end + 2);
    while (!rest.empty()) {
      line_end = rest.find("\r\n");
      std::string_view line = rest.substr(0, line_end);
      rest.remove_prefix(line_end + 2);
      if (line.empty()) break;
      auto colon = line.find(':');
      std::string value(line.substr(colon + 1));
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      while (!value.empty() && value.back() == ' ') value.pop_back();
      head.headers.emplace_back(std::string(line.substr(0, colon)), value);
    }
  }

  std::unique_ptr<http_client> client_;
};

// ---------------------------------------------------------------------------
// REST helpers.

inline const header_list json_headers{{"Content-Type", "application/json"}};

inline std::string message_body(std::string_view content) {
  return boost::json::serialize(boost::json::object{{"content", content}});
}

inline std::string messages_path(const std::string& session_id) { return "/sessions/" + session_id + "/messages"; }

// Starts POST /sessions/{id}/messages and reads the answer's head.
inline std::unique_ptr<sse_reader> start_message(std::uint16_t port, const std::string& session_id, std::string_view content,
                                                 header_list extra = {}) {
  auto r = std::make_unique<sse_reader>(port);
  header_list headers{{"Content-Type", "application/json"}};
  for (auto& h : extra) headers.push_back(std::move(h));
  r->send("POST", messages_path(session_id), message_body(content), headers);
  return r;
}

// A whole run: POST and read to the end; requires a 200 stream that ended.
inline std::unique_ptr<sse_reader> run_message(std::uint16_t port, const std::string& session_id, std::string_view content,
                                               header_list extra = {}, std::chrono::milliseconds total = 20s) {
  auto r = start_message(port, session_id, content, std::move(extra));
  INFO("POST messages -> " << r->head.status << " " << r->head.body);
  REQUIRE(r->head.status == 200);
  REQUIRE(r->chunked);
  const bool ended = r->read_to_end(total);
  INFO("body so far: " << r->parser.body.substr(0, 2000));
  REQUIRE(ended);
  return r;
}

inline boost::json::value get_json(std::uint16_t port, const std::string& target, int expected_status = 200) {
  auto r = http_call(port, "GET", target);
  INFO("GET " << target << " -> " << r.status << " " << r.body.substr(0, 300));
  REQUIRE(r.status == expected_status);
  auto v = try_json(r.body);
  REQUIRE(v.has_value());
  return *v;
}

// POST /sessions with `body`; returns the session id.
inline std::string create_session(std::uint16_t port, std::string_view body = "{}") {
  auto r = http_call(port, "POST", "/sessions", body);
  INFO("create body: " << body << " answer: " << r.body);
  REQUIRE(r.status == 201);
  return str(r.json().at("id"));
}

// A session whose mock agent uses `mock` (a JSON object text), e.g. {"tokens":5}.
inline std::string create_mock_session(std::uint16_t port, std::string_view mock_json) {
  return create_session(port, std::string(R"({"config":{"mock":)") + std::string(mock_json) + "}}");
}

inline boost::json::object get_session(std::uint16_t port, const std::string& id) {
  return get_json(port, "/sessions/" + id).as_object();
}

// Every message of the session, newest first (one page of up to 500).
inline boost::json::array get_messages(std::uint16_t port, const std::string& id) {
  auto page = get_json(port, messages_path(id) + "?limit=500");
  return page.at("messages").as_array();
}

// The contract's error answer: status, JSON type, {"error":{"code","message",...}} only.
using fixtures::check_error;

// The format checks every stream of one run must pass.
inline void check_run_stream(const sse_reader& r, const std::string& run_id) {
  INFO("stream: " << r.parser.body.substr(0, 3000));
  for (const auto& p : r.parser.problems) FAIL_CHECK("SSE format: " << p);
  for (const auto& p : r.decoder.problems) FAIL_CHECK("chunked framing: " << p);
  CHECK(r.decoder.finished());
  CHECK(r.decoder.extra_after_end.empty());
  CHECK(!r.parser.partial());
  CHECK(r.parser.retry.has_value());
  CHECK(r.parser.retry_first);
  REQUIRE(!r.parser.frames.empty());
  std::optional<std::int64_t> previous;
  for (const auto& f : r.parser.frames) {
    INFO("frame: " << f.raw);
    REQUIRE(f.id.has_value());
    if (previous) CHECK(*f.id == *previous + 1);
    previous = f.id;
    CHECK(f.field("run_id") == run_id);
  }
  CHECK(r.parser.frames.back().event == "done");
  CHECK(r.parser.count("done") == 1);
}

// ---------------------------------------------------------------------------
// Polling and the sqlite3 command-line shell.

// Polls `probe` every 50 ms until it holds or `total` elapses.
inline bool eventually(const std::function<bool()>& probe, std::chrono::milliseconds total = 10s) {
  const auto deadline = clock_type::now() + total;
  for (;;) {
    if (probe()) return true;
    if (clock_type::now() >= deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
}

inline bool sqlite3_available() {
  return std::system(std::getenv("AGW_TEST_GATEWAY_PG_URL") ? "command -v psql >/dev/null 2>&1"
                                                            : "command -v sqlite3 >/dev/null 2>&1") == 0;
}

// The PostgreSQL database the gateways of this test run on, when a runner put them on
// one (tests/postgres/integration_on_pg.sh); empty on SQLite.
inline std::string test_pg_url() {
  const char* url = std::getenv("AGW_TEST_GATEWAY_PG_URL");
  return url ? url : "";
}

// Runs `sql` with the sqlite3 CLI on `db` (waiting up to 5 s for locks), or with psql on
// the test's PostgreSQL database when there is one; returns {exit status, stdout}.
inline std::pair<int, std::string> sqlite3_exec(const std::string& db, const std::string& sql) {
  // The SQL goes through a file: no shell quoting of its text.
  temp_dir dir;
  const auto script = (dir.path() / "script.sql").string();
  {
    std::FILE* f = std::fopen(script.c_str(), "w");
    if (!f) return {-1, ""};
    std::string text = ".timeout 5000\n" + sql + "\n";
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  // On PostgreSQL (integration_pg) the same SQL goes to the test's database with psql.
  const std::string pg = test_pg_url();
  const std::string cmd = pg.empty() ? "sqlite3 -batch '" + db + "' < '" + script + "' 2>&1"
                                     : "sed 1d '" + script + "' | psql -tAqX -v ON_ERROR_STOP=1 '" + pg + "' 2>&1";
  std::string out;
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  int status = pclose(p);
  return {status, out};
}

}  // namespace agw::test::runs
