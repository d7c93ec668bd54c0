// pg_store's state scopes (session_state) and message queue (queued_messages), both
// of migration 3; persistence/sqlite_store_state.cpp and sqlite_store.cpp are the reference.
#include <algorithm>

#include "persistence/postgres/pg_store.hpp"

namespace agw::persistence::pg {

// --- state scopes ---

std::map<std::string, std::string> pg_store::read_state(std::string_view scope, std::string_view owner) {
  auto r = db_.run("SELECT key, value FROM session_state WHERE scope = $1 AND owner = $2", params().add(scope).add(owner));
  std::map<std::string, std::string> out;
  for (int i = 0; i < r.rows(); ++i) out.emplace(r.text(i, 0), r.text(i, 1));
  return out;
}

void pg_store::put_state(std::string_view scope, std::string_view owner, std::string_view key, std::string_view value,
                         std::int64_t at_ms) {
  db_.run(
      "INSERT INTO session_state (scope, owner, key, value, updated_at) VALUES ($1, $2, $3, $4, $5) "
      "ON CONFLICT (scope, owner, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
      params().add(scope).add(owner).add(key).add(value).add(at_ms));
}

void pg_store::delete_state(std::string_view scope, std::string_view owner, std::string_view key) {
  db_.run("DELETE FROM session_state WHERE scope = $1 AND owner = $2 AND key = $3", params().add(scope).add(owner).add(key));
}

// --- message queue ---

std::int64_t pg_store::enqueue_message(const core::queued_message_record& m) {
  auto r = db_.run(
      "INSERT INTO queued_messages (id, session_id, content, source, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING seq",
      params().add(m.id).add(m.session_id).add(m.content).add(m.source).add(m.created_at_ms));
  return r.int64(0, 0);
}

std::vector<core::queued_message_record> pg_store::take_queued_messages(std::string_view session_id) {
  // Read and removed in one statement; RETURNING has no order, so sorted here.
  auto r = db_.run("DELETE FROM queued_messages WHERE session_id = $1 RETURNING id, content, source, created_at, seq",
                   params().add(session_id));
  std::vector<core::queued_message_record> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back({r.text(i, 0), std::string(session_id), r.text(i, 1), r.text(i, 2), r.int64(i, 3), r.int64(i, 4)});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.seq < b.seq; });
  return out;
}

std::int64_t pg_store::queued_message_count(std::string_view session_id) {
  return db_.run("SELECT count(*) FROM queued_messages WHERE session_id = $1", params().add(session_id)).int64(0, 0);
}

}  // namespace agw::persistence::pg
