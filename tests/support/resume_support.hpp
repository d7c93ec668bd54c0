#pragma once
// Header-only helpers for the resume_* integration tests (resume and follow:
// GET /sessions/{id}/events with Last-Event-ID, POST resumes), on top of the
// runs helpers in sse_reader.hpp. Everything lives in agw::test::resume.
#include <doctest/doctest.h>

#include <boost/json/serialize.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"

namespace agw::test::resume {

using namespace std::chrono_literals;
using runs::clock_type;
using runs::sse_frame;
using runs::sse_parser;
using runs::sse_reader;

// How a cursor is handed to GET /events.
enum class cursor_via { header, query };

inline std::string events_path(const std::string& sid) { return "/sessions/" + sid + "/events"; }

// Opens GET /sessions/{id}/events (as an EventSource does) and reads the head.
// No cursor: live events only. `receive_buffer` > 0 makes a small TCP window.
inline std::unique_ptr<sse_reader> open_events(std::uint16_t port, const std::string& sid,
                                               std::optional<std::string> cursor = std::nullopt,
                                               cursor_via via = cursor_via::header, int receive_buffer = 0) {
  auto r = std::make_unique<sse_reader>(port, receive_buffer);
  header_list headers{{"Accept", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  std::string target = events_path(sid);
  if (cursor) {
    if (via == cursor_via::header)
      headers.emplace_back("Last-Event-ID", *cursor);
    else
      target += "?last_event_id=" + *cursor;
  }
  r->send("GET", target, {}, headers);
  return r;
}

inline std::unique_ptr<sse_reader> open_events(std::uint16_t port, const std::string& sid, std::int64_t cursor,
                                               cursor_via via = cursor_via::header) {
  return open_events(port, sid, std::to_string(cursor), via);
}

// POST /sessions/{id}/messages with Last-Event-ID (fetch-event-source's reconnect).
inline std::unique_ptr<sse_reader> open_post_resume(std::uint16_t port, const std::string& sid, const std::string& cursor,
                                                    std::string_view body = R"({"content":"the original message"})") {
  auto r = std::make_unique<sse_reader>(port);
  r->send("POST", runs::messages_path(sid), body,
          {{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}, {"Last-Event-ID", cursor}});
  return r;
}

// The frames of a session as first streamed, by id: what every resume must repeat byte for byte.
struct reference {
  std::vector<sse_frame> frames;  // ids 1..last, in order
  std::int64_t last() const { return frames.empty() ? 0 : *frames.back().id; }
  // The raw text of the frames with id > after, concatenated.
  std::string after(std::int64_t after_id) const {
    std::string out;
    for (const auto& f : frames)
      if (*f.id > after_id) out += f.raw;
    return out;
  }
  const sse_frame& at(std::int64_t id) const { return frames.at(static_cast<std::size_t>(id - 1)); }
};

// Builds a reference from a stream that holds ids 1..last consecutively.
inline reference reference_from(const sse_parser& p) {
  reference ref;
  for (const auto& f : p.frames)
    if (f.id) ref.frames.push_back(f);
  return ref;
}

// Empty when `f` is the contract's `reconnected` frame with these values, else what is wrong.
inline std::string reconnected_problem(const sse_frame& f, std::int64_t last_event_id, std::optional<std::int64_t> replayed,
                                       std::optional<std::int64_t> oldest_event_id) {
  std::ostringstream why;
  if (f.event != "reconnected") why << "first frame is '" << f.event << "', not reconnected; ";
  if (f.id) why << "reconnected carries an id line; ";
  if (f.fields != std::vector<std::string>{"event", "data"}) why << "reconnected has fields other than event, data; ";
  const auto& o = f.obj();
  if (o.size() != 4) why << "reconnected data has " << o.size() << " fields: " << f.data_text << "; ";
  if (o.contains("run_id")) why << "reconnected carries run_id; ";
  auto int_field = [&](const char* key) -> std::optional<std::int64_t> {
    auto* v = o.if_contains(key);
    if (!v || !v->is_int64()) {
      why << key << " is missing or not an integer; ";
      return std::nullopt;
    }
    return v->as_int64();
  };
  if (auto v = int_field("last_event_id"); v && *v != last_event_id)
    why << "last_event_id " << *v << " != " << last_event_id << "; ";
  if (auto v = int_field("replayed"); v && replayed && *v != *replayed) why << "replayed " << *v << " != " << *replayed << "; ";
  if (auto v = int_field("oldest_event_id"); v && oldest_event_id && *v != *oldest_event_id)
    why << "oldest_event_id " << *v << " != " << *oldest_event_id << "; ";
  auto* gap = o.if_contains("gap");
  if (!gap || !gap->is_bool())
    why << "gap is missing or not a bool; ";
  else if (gap->as_bool())
    why << "gap is true; ";
  return why.str();
}

// Empty when `r` carries exactly: retry line, reconnected (cursor, replayed = last - cursor,
// no gap, oldest 1), then the reference's frames after the cursor, byte for byte, in order.
// `complete`: the response must also have ended with its last chunk (a POST resume).
inline std::string resume_problem(const sse_reader& r, std::int64_t cursor, const reference& ref, bool complete = false,
                                  std::string_view retry = "3000") {
  std::ostringstream why;
  if (r.head.status != 200) {
    why << "status " << r.head.status << " " << r.head.body;
    return why.str();
  }
  if (r.head.header("Content-Type") != "text/event-stream") why << "content type " << r.head.header("Content-Type") << "; ";
  for (const auto& p : r.parser.problems) why << "SSE format: " << p << "; ";
  for (const auto& p : r.decoder.problems) why << "chunked framing: " << p << "; ";
  if (!r.parser.heartbeat_at.empty()) why << "heartbeats in a short replay; ";
  const auto& frames = r.parser.frames;
  if (frames.empty()) return why.str() + "no frames";
  why << reconnected_problem(frames.front(), cursor, ref.last() - cursor, ref.frames.empty() ? 0 : 1);
  const std::string expected_body = "retry: " + std::string(retry) + "\n" + frames.front().raw + ref.after(cursor);
  if (r.parser.body != expected_body) {
    // Say where they part, not the whole bodies.
    std::size_t at = 0;
    while (at < expected_body.size() && at < r.parser.body.size() && expected_body[at] == r.parser.body[at]) ++at;
    why << "body differs at byte " << at << " (got " << r.parser.body.size() << " bytes, want " << expected_body.size()
        << "): got '" << r.parser.body.substr(at > 80 ? at - 80 : 0, 200) << "' want '"
        << expected_body.substr(at > 80 ? at - 80 : 0, 200) << "'; ";
  }
  if (complete) {
    if (!r.decoder.finished()) why << "the response did not end with its last chunk; ";
    if (!r.decoder.extra_after_end.empty()) why << "bytes after the last chunk; ";
  }
  return why.str();
}

// The numbered frames of a stream, in order (reconnected left out).
inline std::vector<const sse_frame*> numbered(const sse_parser& p) {
  std::vector<const sse_frame*> out;
  for (const auto& f : p.frames)
    if (f.id) out.push_back(&f);
  return out;
}

// Reads a GET /events resume until it holds `want` numbered frames after its reconnected.
inline bool read_numbered(sse_reader& r, std::size_t want, std::chrono::milliseconds total = 15s) {
  return r.read_until([want](const sse_parser& p) { return p.frames.size() >= want + 1; }, total);
}

// Pumps every reader round-robin until `done(i)` holds for all of them, or `total` elapses.
// Returns the indexes that are not done.
inline std::vector<std::size_t> pump_all(std::vector<sse_reader*> readers, const std::function<bool(std::size_t)>& done,
                                         std::chrono::milliseconds total) {
  const auto deadline = clock_type::now() + total;
  for (;;) {
    bool any = false;
    for (std::size_t i = 0; i < readers.size(); ++i) {
      if (done(i) || readers[i]->ended || readers[i]->eof) continue;
      // A few reads each, so that one busy stream does not starve the others.
      for (int k = 0; k < 8 && readers[i]->pump(0ms); ++k) any = true;
    }
    std::vector<std::size_t> left;
    bool can_progress = false;
    for (std::size_t i = 0; i < readers.size(); ++i) {
      if (done(i)) continue;
      left.push_back(i);
      if (!readers[i]->ended && !readers[i]->eof) can_progress = true;
    }
    if (left.empty() || !can_progress || clock_type::now() >= deadline) return left;
    if (!any) std::this_thread::sleep_for(1ms);
  }
}

// The value of a Prometheus sample line `name value` from GET /metrics (-1 when absent).
inline double metric(std::uint16_t port, std::string_view name) {
  auto r = http_call(port, "GET", "/metrics");
  std::istringstream in(r.body);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with('#')) continue;
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 && line[name.size()] == ' ')
      return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

inline std::string session_json(std::uint16_t port, const std::string& sid) {
  return boost::json::serialize(runs::get_session(port, sid));
}

}  // namespace agw::test::resume
