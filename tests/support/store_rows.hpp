#pragma once
// Rows for storage tests, shared by the SQLite suites (tests/persistence) and the
// port conformance suites (tests/ports) so both build the same data.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/events/log_codec.hpp"
#include "core/events/sse_format.hpp"
#include "core/session.hpp"
#include "core/store_records.hpp"

namespace agw::test {

inline core::session_record make_session(const std::string& id, std::int64_t created_at_ms) {
  core::session_record s;
  s.id = id;
  s.thread_id = "thread-" + id;
  s.created_at_ms = created_at_ms;
  s.updated_at_ms = created_at_ms;
  return s;
}

inline core::message_record make_message(const std::string& session_id, const std::string& id, std::int64_t seq) {
  core::message_record m;
  m.id = id;
  m.session_id = session_id;
  m.seq = seq;
  m.role = seq % 2 ? "user" : "assistant";
  m.content = "content of " + id;
  m.created_at_ms = 1000 + seq;
  return m;
}

// Token frames first..last of run-1, each with the content "t".
inline std::vector<core::frame_ptr> make_token_frames(std::int64_t first, std::int64_t last) {
  std::vector<core::frame_ptr> out;
  for (auto id = first; id <= last; ++id)
    out.push_back(std::make_shared<const core::event_frame>(
        core::make_event_frame(id, core::event_type::token, "run-1", {{"content", "t"}})));
  return out;
}

// The frames first..last of a session, as the channel would write them in one batch.
inline core::event_batch_record make_batch(const std::string& session_id, std::int64_t first, std::int64_t last) {
  core::event_batch_record b;
  b.session_id = session_id;
  b.first_id = first;
  b.last_id = last;
  std::vector<core::frame_ptr> frames;
  for (std::int64_t id = first; id <= last; ++id)
    frames.push_back(std::make_shared<const core::event_frame>(
        core::make_event_frame(id, core::event_type::token, "run-1", {{"content", "tok\n" + std::to_string(id)}})));
  b.frames = core::encode_log_frames(frames);
  b.created_at_ms = 5000 + first;
  return b;
}

// The exact SSE bytes make_batch stores for event `id`.
inline std::string frame_text(std::int64_t id) {
  return core::make_event_frame(id, core::event_type::token, "run-1", {{"content", "tok\n" + std::to_string(id)}}).sse;
}

inline core::webhook_delivery_record make_delivery(const std::string& id, const std::string& session_id, std::int64_t due_ms) {
  core::webhook_delivery_record d;
  d.id = id;
  d.webhook_id = "msg_" + id;
  d.session_id = session_id;
  d.run_id = "run-" + id;
  d.url = "http://127.0.0.1:9/" + id;
  d.payload = R"({"id":")" + id + R"("})";
  d.next_attempt_at_ms = due_ms;
  d.created_at_ms = due_ms;
  return d;
}

// One attempt's outcome; no status code means the request failed (an error text instead).
inline core::webhook_attempt_outcome make_outcome(const std::string& delivery_id, std::int64_t at_ms, std::optional<int> code,
                                                  std::string status, std::optional<std::int64_t> next_ms) {
  core::webhook_attempt_outcome o;
  o.delivery_id = delivery_id;
  o.attempt.at_ms = at_ms;
  o.attempt.status_code = code;
  if (!code) o.attempt.error = "connect: Connection refused";
  o.attempt.duration_ms = 3;
  o.status = std::move(status);
  o.next_attempt_at_ms = next_ms;
  return o;
}

}  // namespace agw::test
