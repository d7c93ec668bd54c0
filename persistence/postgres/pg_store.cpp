#include "persistence/postgres/pg_store.hpp"

#include <algorithm>
#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <set>

#include "core/events/log_codec.hpp"

namespace agw::persistence::pg {
namespace {

const std::string session_columns =
    "s.id, s.thread_id, s.title, s.status, s.agent_name, s.config, s.scopes, s.metadata, s.created_at, s.updated_at, "
    // The newest row's last id (trim_events moves the column when it takes every row).
    "GREATEST(s.last_event_id, COALESCE((SELECT b.last_id FROM event_batches b WHERE b.session_id = s.id "
    "ORDER BY b.first_id DESC LIMIT 1), 0)), "
    "(SELECT count(*) FROM messages m WHERE m.session_id = s.id), s.mode, "
    // Migration 3: the session's attributes.
    "s.labels, s.variables, s.ttl_seconds, s.active_at, s.event_webhook_url";

core::session_record read_session(const result& r, int row) {
  core::session_record s;
  s.id = r.text(row, 0);
  s.thread_id = r.text(row, 1);
  s.title = r.optional_text(row, 2);
  s.status = r.text(row, 3);
  s.agent_name = r.text(row, 4);
  s.config = boost::json::parse(r.text(row, 5)).as_object();
  s.scopes = core::string_map_from_json(r.text(row, 6));
  s.metadata = core::string_map_from_json(r.text(row, 7));
  s.created_at_ms = r.int64(row, 8);
  s.updated_at_ms = r.int64(row, 9);
  s.last_event_id = r.int64(row, 10);
  s.message_count = r.int64(row, 11);
  s.mode = r.text(row, 12);
  s.labels = core::labels_from_json(r.text(row, 13));
  s.variables = core::string_map_from_json(r.text(row, 14));
  s.ttl_seconds = r.optional_int64(row, 15);
  s.active_at_ms = r.int64(row, 16);
  s.event_webhook_url = r.optional_text(row, 17);
  return s;
}

const std::string message_columns =
    "id, session_id, seq, role, content, tool_calls, tool_call_id, token_count, model_used, parent_id, status, created_at, "
    "source";

core::message_record read_message(const result& r, int row) {
  core::message_record m;
  m.id = r.text(row, 0);
  m.session_id = r.text(row, 1);
  m.seq = r.int64(row, 2);
  m.role = r.text(row, 3);
  m.content = r.text(row, 4);
  m.tool_calls = boost::json::parse(r.text(row, 5)).as_array();
  m.tool_call_id = r.optional_text(row, 6);
  m.token_count = r.optional_int64(row, 7);
  m.model_used = r.optional_text(row, 8);
  m.parent_id = r.optional_text(row, 9);
  m.status = r.text(row, 10);
  m.created_at_ms = r.int64(row, 11);
  m.source = r.optional_text(row, 12).value_or("");  // NULL: stored before sources (migration 3)
  return m;
}

}  // namespace

// --- transactions ---

void pg_store::begin_batch() { db_.exec("BEGIN"); }
void pg_store::commit_batch() { db_.exec("COMMIT"); }
void pg_store::rollback_batch() {
  if (db_.transaction_status() != PQTRANS_IDLE) db_.exec("ROLLBACK");
}
void pg_store::savepoint() { db_.exec("SAVEPOINT job"); }
void pg_store::release_savepoint() { db_.exec("RELEASE SAVEPOINT job"); }
void pg_store::rollback_to_savepoint() { db_.exec("ROLLBACK TO SAVEPOINT job"); }
bool pg_store::batch_open() {
  // A failed statement leaves the transaction open (in error) until the savepoint is
  // rolled back: still open. Only a lost connection ends it by itself.
  const auto s = db_.transaction_status();
  return s == PQTRANS_INTRANS || s == PQTRANS_INERROR || s == PQTRANS_ACTIVE;
}

pg_store::read_snapshot::read_snapshot(pg_store& store) : db_(store.db_), own_(store.db_.transaction_status() == PQTRANS_IDLE) {
  // Read-only under REPEATABLE READ: one snapshot for every statement, and never a
  // serialization failure (only writing transactions get those).
  if (own_) db_.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
}

pg_store::read_snapshot::~read_snapshot() {
  // Only a transaction that is still there is ended: a lost connection (its status
  // unknown, or idle after a reconnect) has none, and a statement sent to it would only
  // try to reconnect again.
  const auto open = [this] {
    const auto s = db_.transaction_status();
    return s == PQTRANS_INTRANS || s == PQTRANS_INERROR;
  };
  if (!own_ || !open()) return;
  // A failed statement left the transaction aborted: COMMIT then rolls it back.
  try {
    db_.exec("COMMIT");
  } catch (...) {
    try {
      if (open()) db_.exec("ROLLBACK");
    } catch (...) {
    }
  }
}

// --- sessions ---

void pg_store::write_labels(const core::session_record& s, bool fresh) {
  if (!fresh) db_.run("DELETE FROM session_labels WHERE session_id = $1", params().add(s.id));
  for (const auto& [kind, map] : {std::pair{"metadata", &s.metadata}, std::pair{"scopes", &s.scopes}})
    for (const auto& [k, v] : *map)
      db_.run("INSERT INTO session_labels (session_id, kind, key, value) VALUES ($1, $2, $3, $4)",
              params().add(s.id).add(kind).add(k).add(v));
  // The label index (migration 3) in one statement: the labels no longer there go, the
  // new ones join (the rows both have stay).
  if (fresh && s.labels.empty()) return;
  db_.run(
      "WITH l AS (SELECT DISTINCT json_array_elements_text($1::json) AS label), "
      "gone AS (DELETE FROM session_label_index WHERE session_id = $2::text AND label NOT IN (SELECT label FROM l)) "
      "INSERT INTO session_label_index (label, session_id) SELECT label, $2::text FROM l ON CONFLICT DO NOTHING",
      params().add(core::labels_to_json(s.labels)).add(s.id));
}

void pg_store::insert_session(const core::session_record& s) {
  db_.run(
      "INSERT INTO sessions (id, thread_id, title, status, agent_name, config, scopes, metadata, created_at, updated_at, "
      "last_event_id, mode, labels, variables, ttl_seconds, active_at, event_webhook_url) "
      "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
      params()
          .add(s.id)
          .add(s.thread_id)
          .add(s.title)
          .add(s.status)
          .add(s.agent_name)
          .add(boost::json::serialize(s.config))
          .add(core::string_map_to_json(s.scopes))
          .add(core::string_map_to_json(s.metadata))
          .add(s.created_at_ms)
          .add(s.updated_at_ms)
          .add(s.last_event_id)
          .add(s.mode)
          .add(core::labels_to_json(s.labels))
          .add(core::string_map_to_json(s.variables))
          .add(s.ttl_seconds)
          .add(std::max(s.active_at_ms, s.created_at_ms))
          .add(s.event_webhook_url));
  write_labels(s, true);
}

std::optional<core::session_record> pg_store::find_session(std::string_view id) {
  static const std::string sql = "SELECT " + session_columns + " FROM sessions s WHERE s.id = $1";
  auto r = db_.run(sql, params().add(id));
  if (r.rows() == 0) return std::nullopt;
  return read_session(r, 0);
}

core::session_page pg_store::list_sessions(const core::session_filter& f) {
  params p;
  std::string where = " WHERE true";
  auto next = [&p] { return "$" + std::to_string(p.size()); };
  if (f.status) {
    p.add(*f.status);
    where += " AND s.status = " + next();
  }
  for (const auto* labels : {&f.metadata, &f.scopes})
    for (const auto& [k, v] : *labels) {
      const char* kind = labels == &f.metadata ? "metadata" : "scopes";
      p.add(k);
      const auto key = next();
      p.add(v);
      where += std::string(" AND EXISTS (SELECT 1 FROM session_labels l WHERE l.session_id = s.id AND l.kind = '") + kind +
               "' AND l.key = " + key + " AND l.value = " + next() + ")";
    }
  for (const auto& l : f.labels) {
    p.add(l);
    where += " AND EXISTS (SELECT 1 FROM session_label_index x WHERE x.label = " + next() + " AND x.session_id = s.id)";
  }
  core::session_page page;
  // The total and the page from one commit: a session made or deleted between them would
  // otherwise show in one and not the other.
  const read_snapshot snapshot(*this);
  page.total = db_.run_once("SELECT count(*) FROM sessions s" + where, p).int64(0, 0);
  p.add(f.limit);
  const auto limit = next();
  p.add(f.offset);
  auto r = db_.run_once("SELECT " + session_columns + " FROM sessions s" + where +
                            " ORDER BY s.created_at DESC, s.seq DESC LIMIT " + limit + " OFFSET " + next(),
                        p);
  for (int i = 0; i < r.rows(); ++i) page.sessions.push_back(read_session(r, i));
  return page;
}

bool pg_store::update_session(const core::session_record& s) {
  auto r = db_.run(
      "UPDATE sessions SET title = $1, status = $2, agent_name = $3, config = $4, scopes = $5, metadata = $6, updated_at = $7, "
      "mode = $8, labels = $9, variables = $10, ttl_seconds = $11, active_at = GREATEST(active_at, $12::bigint), "
      "event_webhook_url = $13 WHERE id = $14",
      params()
          .add(s.title)
          .add(s.status)
          .add(s.agent_name)
          .add(boost::json::serialize(s.config))
          .add(core::string_map_to_json(s.scopes))
          .add(core::string_map_to_json(s.metadata))
          .add(s.updated_at_ms)
          .add(s.mode)
          .add(core::labels_to_json(s.labels))
          .add(core::string_map_to_json(s.variables))
          .add(s.ttl_seconds)
          .add(std::max(s.active_at_ms, s.updated_at_ms))
          .add(s.event_webhook_url)
          .add(s.id));
  if (r.affected() == 0) return false;
  write_labels(s, false);
  return true;
}

bool pg_store::delete_session(std::string_view id) {
  // Everything the session owns goes by ON DELETE CASCADE.
  return db_.run("DELETE FROM sessions WHERE id = $1", params().add(id)).affected() > 0;
}

std::vector<std::string> pg_store::all_session_ids() {
  auto r = db_.run("SELECT id FROM sessions ORDER BY created_at, seq");
  std::vector<std::string> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back(r.text(i, 0));
  return out;
}

std::vector<core::session_record> pg_store::idle_sessions(std::int64_t now_ms, std::int64_t default_ttl_ms, std::size_t limit) {
  // Sessions on the default TTL (by the active_at index) and those with their own.
  static const std::string sql = "SELECT " + session_columns +
                                 " FROM sessions s WHERE (s.ttl_seconds IS NULL AND $1::bigint > 0 AND "
                                 "s.active_at <= $2::bigint - $1::bigint) "
                                 "OR (s.ttl_seconds > 0 AND s.active_at + s.ttl_seconds * 1000 <= $2::bigint) "
                                 "ORDER BY s.active_at, s.seq LIMIT $3";
  auto r = db_.run(sql, params().add(default_ttl_ms).add(now_ms).add(static_cast<std::int64_t>(limit)));
  std::vector<core::session_record> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back(read_session(r, i));
  return out;
}

std::vector<core::event_webhook_cursor> pg_store::event_webhook_cursors(std::string_view after_id, std::size_t limit) {
  auto r = db_.run(
      "SELECT id, event_webhook_url, event_webhook_cursor FROM sessions WHERE event_webhook_url IS NOT NULL AND id > $1 "
      "ORDER BY id LIMIT $2",
      params().add(after_id).add(static_cast<std::int64_t>(limit)));
  std::vector<core::event_webhook_cursor> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back({r.text(i, 0), r.text(i, 1), r.int64(i, 2)});
  return out;
}

std::optional<core::event_webhook_cursor> pg_store::find_event_webhook_cursor(std::string_view session_id) {
  auto r =
      db_.run("SELECT id, event_webhook_url, event_webhook_cursor FROM sessions WHERE id = $1 AND event_webhook_url IS NOT NULL",
              params().add(session_id));
  if (r.rows() == 0) return std::nullopt;
  return core::event_webhook_cursor{r.text(0, 0), r.text(0, 1), r.int64(0, 2)};
}

bool pg_store::advance_event_webhook_cursor(std::string_view session_id, std::int64_t forwarded_id) {
  return db_.run("UPDATE sessions SET event_webhook_cursor = GREATEST(event_webhook_cursor, $1::bigint) WHERE id = $2",
                 params().add(forwarded_id).add(session_id))
             .affected() > 0;
}

// --- messages ---

core::message_page pg_store::list_messages(std::string_view session_id, std::int64_t limit, std::int64_t offset) {
  core::message_page page;
  // The total and the page from one commit, as list_sessions.
  const read_snapshot snapshot(*this);
  page.total = db_.run("SELECT count(*) FROM messages WHERE session_id = $1", params().add(session_id)).int64(0, 0);
  static const std::string sql =
      "SELECT " + message_columns + " FROM messages WHERE session_id = $1 ORDER BY seq DESC LIMIT $2 OFFSET $3";
  auto r = db_.run(sql, params().add(session_id).add(limit).add(offset));
  for (int i = 0; i < r.rows(); ++i) page.messages.push_back(read_message(r, i));
  return page;
}

std::vector<core::message_record> pg_store::all_messages(std::string_view session_id) {
  static const std::string sql = "SELECT " + message_columns + " FROM messages WHERE session_id = $1 ORDER BY seq";
  auto r = db_.run(sql, params().add(session_id));
  std::vector<core::message_record> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back(read_message(r, i));
  return out;
}

void pg_store::upsert_message(const core::message_record& m) {
  db_.run(
      "INSERT INTO messages (id, session_id, seq, role, content, tool_calls, tool_call_id, token_count, model_used, "
      "parent_id, status, created_at, source) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) "
      "ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, role = excluded.role, content = excluded.content, "
      "tool_calls = excluded.tool_calls, tool_call_id = excluded.tool_call_id, token_count = excluded.token_count, "
      "model_used = excluded.model_used, parent_id = excluded.parent_id, status = excluded.status, "
      "created_at = excluded.created_at, source = excluded.source",
      params()
          .add(m.id)
          .add(m.session_id)
          .add(m.seq)
          .add(m.role)
          .add(m.content)
          .add(boost::json::serialize(m.tool_calls))
          .add(m.tool_call_id)
          .add(m.token_count)
          .add(m.model_used)
          .add(m.parent_id)
          .add(m.status)
          .add(m.created_at_ms)
          .add(m.source.empty() ? std::optional<std::string>() : std::optional<std::string>(m.source)));
}

void pg_store::delete_messages(std::string_view session_id) {
  db_.run("DELETE FROM messages WHERE session_id = $1", params().add(session_id));
}

// --- event log ---

namespace {
// A row with this first id can only be an earlier attempt of the same frames (ids are
// never reused once committed): a retry that reaches further replaces it.
constexpr const char* upsert_event_rows =
    " ON CONFLICT (session_id, first_id) DO UPDATE SET last_id = excluded.last_id, frames = excluded.frames, "
    "created_at = excluded.created_at WHERE excluded.last_id > event_batches.last_id";
}  // namespace

void pg_store::append_events(const core::event_batch_record& b) {
  static const std::string sql =
      std::string("INSERT INTO event_batches (session_id, first_id, last_id, frames, created_at) VALUES ($1, $2, $3, $4, $5)") +
      upsert_event_rows;
  db_.run(sql, params().add(b.session_id).add(b.first_id).add(b.last_id).add_bytes(b.frames).add(b.created_at_ms));
}

void pg_store::append_event_rows(const std::vector<core::event_batch_record>& rows) {
  if (rows.size() == 1) return append_events(rows.front());
  // One statement of n rows: VALUES lists of 5 parameters each.
  std::string sql = "INSERT INTO event_batches (session_id, first_id, last_id, frames, created_at) VALUES ";
  params p;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& b = rows[i];
    const auto n = static_cast<int>(i) * 5;
    sql += (i ? ", (" : "(") + ("$" + std::to_string(n + 1)) + ", $" + std::to_string(n + 2) + "::bigint, $" +
           std::to_string(n + 3) + "::bigint, $" + std::to_string(n + 4) + "::bytea, $" + std::to_string(n + 5) + "::bigint)";
    p.add(b.session_id).add(b.first_id).add(b.last_id).add_bytes(b.frames).add(b.created_at_ms);
  }
  db_.run_once(sql + upsert_event_rows, p);
}

std::vector<core::frame_ptr> pg_store::events_after(std::string_view session_id, std::int64_t after_id, std::size_t limit) {
  std::vector<core::frame_ptr> out;
  if (limit == 0) return out;
  // Every row holds at least one event: `limit` rows are enough.
  auto r = db_.run("SELECT first_id, frames FROM event_batches WHERE session_id = $1 AND last_id > $2 ORDER BY first_id LIMIT $3",
                   params().add(session_id).add(after_id).add(static_cast<std::int64_t>(limit)));
  for (int i = 0; i < r.rows() && out.size() < limit; ++i)
    for (auto& e : core::decode_log_frames(r.bytes(i, 1), r.int64(i, 0))) {
      if (e->id <= after_id) continue;
      if (out.size() >= limit) break;
      out.push_back(std::move(e));
    }
  return out;
}

std::int64_t pg_store::oldest_event_id(std::string_view session_id) {
  auto r = db_.run("SELECT min(first_id) FROM event_batches WHERE session_id = $1", params().add(session_id));
  return r.is_null(0, 0) ? 0 : r.int64(0, 0);
}

void pg_store::trim_events(std::string_view session_id, std::int64_t keep_from_id) {
  // The sequence is read from the newest row: keep it where it is should a cut take every row.
  db_.run(
      "UPDATE sessions SET last_event_id = GREATEST(last_event_id, n.last_id) FROM (SELECT last_id FROM event_batches "
      "WHERE session_id = $1 ORDER BY first_id DESC LIMIT 1) n WHERE id = $1 AND n.last_id < $2",
      params().add(session_id).add(keep_from_id));
  db_.run("DELETE FROM event_batches WHERE session_id = $1 AND last_id < $2", params().add(session_id).add(keep_from_id));
  // The row the cut goes through keeps only its events from the cut on.
  auto straddling =
      db_.run("SELECT first_id, frames FROM event_batches WHERE session_id = $1 AND first_id < $2 AND last_id >= $2",
              params().add(session_id).add(keep_from_id));
  if (straddling.rows() == 0) return;
  const auto first = straddling.int64(0, 0);
  const auto kept = core::encode_log_suffix(straddling.bytes(0, 1), first, keep_from_id);
  db_.run("UPDATE event_batches SET first_id = $1, frames = $2 WHERE session_id = $3 AND first_id = $4",
          params().add(keep_from_id).add_bytes(kept).add(session_id).add(first));
}

// --- idempotency keys ---

std::optional<core::idempotency_record> pg_store::find_idempotency_key(std::string_view session_id, std::string_view key) {
  auto r = db_.run(
      "SELECT session_id, key, content_hash, run_id, first_event_id, created_at FROM idempotency_keys "
      "WHERE session_id = $1 AND key = $2",
      params().add(session_id).add(key));
  if (r.rows() == 0) return std::nullopt;
  return core::idempotency_record{r.text(0, 0), r.text(0, 1), r.text(0, 2), r.text(0, 3), r.int64(0, 4), r.int64(0, 5)};
}

void pg_store::insert_idempotency_key(const core::idempotency_record& k) {
  db_.run(
      "INSERT INTO idempotency_keys (session_id, key, content_hash, run_id, first_event_id, created_at) "
      "VALUES ($1, $2, $3, $4, $5, $6)",
      params().add(k.session_id).add(k.key).add(k.content_hash).add(k.run_id).add(k.first_event_id).add(k.created_at_ms));
}

void pg_store::purge_idempotency_keys(std::int64_t older_than_ms) {
  db_.run("DELETE FROM idempotency_keys WHERE created_at < $1", params().add(older_than_ms));
}

}  // namespace agw::persistence::pg
