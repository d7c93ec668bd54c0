#pragma once
// Helpers shared by the persistence suites: a throw-away database file and rows.
#include <filesystem>
#include <memory>
#include <string>

#include "core/events/log_codec.hpp"
#include "core/events/sse_format.hpp"
#include "core/ids.hpp"
#include "persistence/migrations.hpp"
#include "persistence/sqlite_store.hpp"

namespace agw::test {

// A database file in the temp directory, removed (with its WAL files) afterwards.
struct temp_db {
  std::string path =
      (std::filesystem::temp_directory_path() / ("agw-unit-" + core::new_uuid() + ".db")).string();

  temp_db() = default;
  temp_db(const temp_db&) = delete;
  temp_db& operator=(const temp_db&) = delete;
  ~temp_db() {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
  }

  // A connection to the migrated database.
  std::unique_ptr<persistence::sqlite_store> open() const {
    auto store = std::make_unique<persistence::sqlite_store>(path);
    persistence::migrate(store->database());
    return store;
  }
};

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

inline std::string frame_text(std::int64_t id) {
  return core::make_event_frame(id, core::event_type::token, "run-1", {{"content", "tok\n" + std::to_string(id)}}).sse;
}

// SELECT COUNT(*) FROM <table> WHERE session_id = ?
inline std::int64_t count_rows(persistence::sqlite_store& store, const std::string& table, const std::string& session_id) {
  auto st = store.database().prepare_uncached("SELECT COUNT(*) FROM " + table + " WHERE session_id = ?");
  st.bind(1, session_id);
  st.step();
  return st.int64(0);
}

inline std::string pragma_text(persistence::sqlite_store& store, const std::string& pragma) {
  auto st = store.database().prepare_uncached("PRAGMA " + pragma);
  st.step();
  return st.text(0);
}

}  // namespace agw::test
