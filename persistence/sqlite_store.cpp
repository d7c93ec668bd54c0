#include "persistence/sqlite_store.hpp"

#include "core/events/log_codec.hpp"
#include "core/events/sse_format.hpp"
#include "persistence/journal_codec.hpp"
#include "persistence/journal_file.hpp"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>
#include <limits>
#include <map>
#include <set>

namespace agw::persistence {
namespace {

constexpr const char* session_columns =
    "s.id, s.thread_id, s.title, s.status, s.agent_name, s.config, s.scopes, s.metadata, s.created_at, s.updated_at, "
    // The last id is the newest segment's (the column is not moved per commit; the journal
    // is folded into segments at start-up, and a live session's channel knows better).
    "max(s.last_event_id, COALESCE((SELECT b.last_id FROM event_batches b WHERE b.session_id = s.id "
    "ORDER BY b.first_id DESC LIMIT 1), 0)), "
    // Kept by triggers on messages (migration 3): no row is counted here.
    "COALESCE((SELECT c.n FROM message_counts c WHERE c.session_id = s.id), 0), s.mode, "
    // Migration 6: the session's attributes.
    "s.labels, s.variables, s.ttl_seconds, s.active_at, s.event_webhook_url";

core::session_record read_session(const statement& st) {
  core::session_record s;
  s.id = st.text(0);
  s.thread_id = st.text(1);
  s.title = st.optional_text(2);
  s.status = st.text(3);
  s.agent_name = st.text(4);
  s.config = boost::json::parse(st.text(5)).as_object();
  s.scopes = core::string_map_from_json(st.text(6));
  s.metadata = core::string_map_from_json(st.text(7));
  s.created_at_ms = st.int64(8);
  s.updated_at_ms = st.int64(9);
  s.last_event_id = st.int64(10);
  s.message_count = st.int64(11);
  s.mode = st.text(12);
  s.labels = core::labels_from_json(st.text(13));
  s.variables = core::string_map_from_json(st.text(14));
  s.ttl_seconds = st.optional_int64(15);
  s.active_at_ms = st.int64(16);
  s.event_webhook_url = st.optional_text(17);
  return s;
}

constexpr const char* message_columns =
    "id, session_id, seq, role, content, tool_calls, tool_call_id, token_count, model_used, parent_id, status, created_at, "
    "source";

core::message_record read_message(const statement& st) {
  core::message_record m;
  m.id = st.text(0);
  m.session_id = st.text(1);
  m.seq = st.int64(2);
  m.role = st.text(3);
  m.content = st.text(4);
  m.tool_calls = boost::json::parse(st.text(5)).as_array();
  m.tool_call_id = st.optional_text(6);
  m.token_count = st.optional_int64(7);
  m.model_used = st.optional_text(8);
  m.parent_id = st.optional_text(9);
  m.status = st.text(10);
  m.created_at_ms = st.int64(11);
  m.source = st.optional_text(12).value_or("");  // NULL: stored before sources (migration 5)
  return m;
}

}  // namespace

sqlite_store::sqlite_store(const std::string& path, const sqlite_database::options& opts, const journal_tails* tails)
    : db_(path, opts), tails_(tails) {}

void sqlite_store::begin_batch() { db_.prepare("BEGIN IMMEDIATE").run(); }
void sqlite_store::commit_batch() { db_.prepare("COMMIT").run(); }
void sqlite_store::rollback_batch() {
  if (!sqlite3_get_autocommit(db_.handle())) db_.prepare("ROLLBACK").run();
}

sqlite_store::read_snapshot::read_snapshot(sqlite_store& store)
    : db_(store.db_), own_(sqlite3_get_autocommit(store.db_.handle()) != 0) {
  if (own_) db_.exec("BEGIN");
}

sqlite_store::read_snapshot::~read_snapshot() {
  if (!own_ || sqlite3_get_autocommit(db_.handle())) return;
  // A read transaction: COMMIT and ROLLBACK both just end it; never left open.
  if (sqlite3_exec(db_.handle(), "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK)
    sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void sqlite_store::savepoint() { db_.prepare("SAVEPOINT job").run(); }
void sqlite_store::release_savepoint() { db_.prepare("RELEASE job").run(); }
void sqlite_store::rollback_to_savepoint() { db_.prepare("ROLLBACK TO job").run(); }

void sqlite_store::write_labels(const core::session_record& s) {
  db_.prepare("DELETE FROM session_labels WHERE session_id = ?").bind(1, s.id).run();
  for (const auto& [kind, map] : {std::pair{"metadata", &s.metadata}, std::pair{"scopes", &s.scopes}})
    for (const auto& [k, v] : *map)
      db_.prepare("INSERT INTO session_labels (session_id, kind, key, value) VALUES (?, ?, ?, ?)")
          .bind(1, s.id)
          .bind(2, std::string_view(kind))
          .bind(3, k)
          .bind(4, v)
          .run();
  db_.prepare("DELETE FROM session_label_index WHERE session_id = ?").bind(1, s.id).run();
  for (const auto& l : s.labels)
    db_.prepare("INSERT INTO session_label_index (label, session_id) VALUES (?, ?)").bind(1, l).bind(2, s.id).run();
}

void sqlite_store::insert_session(const core::session_record& s) {
  db_.prepare(
         "INSERT INTO sessions (id, thread_id, title, status, agent_name, config, scopes, metadata, created_at, updated_at, "
         "last_event_id, mode, labels, variables, ttl_seconds, active_at, event_webhook_url) "
         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .bind(1, s.id)
      .bind(2, s.thread_id)
      .bind(3, s.title)
      .bind(4, s.status)
      .bind(5, s.agent_name)
      .bind(6, boost::json::serialize(s.config))
      .bind(7, core::string_map_to_json(s.scopes))
      .bind(8, core::string_map_to_json(s.metadata))
      .bind(9, s.created_at_ms)
      .bind(10, s.updated_at_ms)
      .bind(11, s.last_event_id)
      .bind(12, s.mode)
      .bind(13, core::labels_to_json(s.labels))
      .bind(14, core::string_map_to_json(s.variables))
      .bind(15, s.ttl_seconds)
      .bind(16, std::max(s.active_at_ms, s.created_at_ms))
      .bind(17, s.event_webhook_url)
      .run();
  write_labels(s);
}

std::optional<core::session_record> sqlite_store::find_session(std::string_view id) {
  static const std::string sql = std::string("SELECT ") + session_columns + " FROM sessions s WHERE s.id = ?";
  auto st = db_.prepare(sql.c_str());
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  return read_session(st);
}

core::session_page sqlite_store::list_sessions(const core::session_filter& f) {
  std::string where = " WHERE 1=1";
  if (f.status) where += " AND s.status = ?";
  auto label = [](const char* kind) {
    return std::string(" AND EXISTS (SELECT 1 FROM session_labels l WHERE l.session_id = s.id AND l.kind = '") + kind +
           "' AND l.key = ? AND l.value = ?)";
  };
  for (std::size_t i = 0; i < f.metadata.size(); ++i) where += label("metadata");
  for (std::size_t i = 0; i < f.scopes.size(); ++i) where += label("scopes");
  for (std::size_t i = 0; i < f.labels.size(); ++i)
    where += " AND EXISTS (SELECT 1 FROM session_label_index x WHERE x.label = ? AND x.session_id = s.id)";
  auto bind_filters = [&](statement& st) {
    int n = 1;
    if (f.status) st.bind(n++, *f.status);
    for (const auto* labels : {&f.metadata, &f.scopes})
      for (const auto& [k, v] : *labels) {
        st.bind(n, k).bind(n + 1, v);
        n += 2;
      }
    for (const auto& l : f.labels) st.bind(n++, l);
    return n;
  };
  core::session_page page;
  // The total and the page from one commit: a session made or deleted between them would
  // otherwise show in one and not the other.
  const read_snapshot snapshot(*this);
  {
    auto st = db_.prepare_uncached("SELECT COUNT(*) FROM sessions s" + where);
    bind_filters(st);
    st.step();
    page.total = st.int64(0);
  }
  auto st = db_.prepare_uncached(std::string("SELECT ") + session_columns + " FROM sessions s" + where +
                                 " ORDER BY s.created_at DESC, s.rowid DESC LIMIT ? OFFSET ?");
  int n = bind_filters(st);
  st.bind(n, f.limit).bind(n + 1, f.offset);
  while (st.step()) page.sessions.push_back(read_session(st));
  return page;
}

bool sqlite_store::update_session(const core::session_record& s) {
  db_.prepare(
         "UPDATE sessions SET title = ?, status = ?, agent_name = ?, config = ?, scopes = ?, metadata = ?, updated_at = ?, "
         "mode = ?, labels = ?, variables = ?, ttl_seconds = ?, active_at = max(active_at, ?), event_webhook_url = ? "
         "WHERE id = ?")
      .bind(1, s.title)
      .bind(2, s.status)
      .bind(3, s.agent_name)
      .bind(4, boost::json::serialize(s.config))
      .bind(5, core::string_map_to_json(s.scopes))
      .bind(6, core::string_map_to_json(s.metadata))
      .bind(7, s.updated_at_ms)
      .bind(8, s.mode)
      .bind(9, core::labels_to_json(s.labels))
      .bind(10, core::string_map_to_json(s.variables))
      .bind(11, s.ttl_seconds)
      .bind(12, std::max(s.active_at_ms, s.updated_at_ms))
      .bind(13, s.event_webhook_url)
      .bind(14, s.id)
      .run();
  if (db_.changes() == 0) return false;
  write_labels(s);
  return true;
}

bool sqlite_store::delete_session(std::string_view id) {
  db_.prepare("DELETE FROM sessions WHERE id = ?").bind(1, id).run();
  // The session's journaled events (rows shared with other sessions) go with the next cuts
  // of the journal, seconds later, and the start-up fold skips them.
  return db_.changes() > 0;
}

std::vector<std::string> sqlite_store::all_session_ids() {
  std::vector<std::string> out;
  auto st = db_.prepare("SELECT id FROM sessions ORDER BY created_at, rowid");
  while (st.step()) out.push_back(st.text(0));
  return out;
}

std::vector<core::session_record> sqlite_store::idle_sessions(std::int64_t now_ms, std::int64_t default_ttl_ms,
                                                              std::size_t limit) {
  // Two indexed-by-active_at halves: sessions on the default TTL, and those with their own
  // (few; their expiry is active_at + ttl, which no index orders).
  static const std::string sql = std::string("SELECT ") + session_columns +
                                 " FROM sessions s WHERE (s.ttl_seconds IS NULL AND ?1 > 0 AND s.active_at <= ?2 - ?1) "
                                 "OR (s.ttl_seconds > 0 AND s.active_at + s.ttl_seconds * 1000 <= ?2) "
                                 "ORDER BY s.active_at LIMIT ?3";
  auto st = db_.prepare(sql.c_str());
  st.bind(1, default_ttl_ms).bind(2, now_ms).bind(3, static_cast<std::int64_t>(limit));
  std::vector<core::session_record> out;
  while (st.step()) out.push_back(read_session(st));
  return out;
}

std::vector<core::event_webhook_cursor> sqlite_store::event_webhook_cursors(std::string_view after_id, std::size_t limit) {
  auto st = db_.prepare(
      "SELECT id, event_webhook_url, event_webhook_cursor FROM sessions WHERE event_webhook_url IS NOT NULL AND id > ? "
      "ORDER BY id LIMIT ?");
  st.bind(1, after_id).bind(2, static_cast<std::int64_t>(limit));
  std::vector<core::event_webhook_cursor> out;
  while (st.step()) out.push_back({st.text(0), st.text(1), st.int64(2)});
  return out;
}

std::optional<core::event_webhook_cursor> sqlite_store::find_event_webhook_cursor(std::string_view session_id) {
  auto st = db_.prepare(
      "SELECT id, event_webhook_url, event_webhook_cursor FROM sessions WHERE id = ? AND event_webhook_url IS NOT NULL");
  st.bind(1, session_id);
  if (!st.step()) return std::nullopt;
  return core::event_webhook_cursor{st.text(0), st.text(1), st.int64(2)};
}

bool sqlite_store::advance_event_webhook_cursor(std::string_view session_id, std::int64_t forwarded_id) {
  db_.prepare("UPDATE sessions SET event_webhook_cursor = max(event_webhook_cursor, ?) WHERE id = ?")
      .bind(1, forwarded_id)
      .bind(2, session_id)
      .run();
  return db_.changes() > 0;
}

core::message_page sqlite_store::list_messages(std::string_view session_id, std::int64_t limit, std::int64_t offset) {
  core::message_page page;
  // The total and the page from one commit, as list_sessions.
  const read_snapshot snapshot(*this);
  {
    auto st = db_.prepare("SELECT COUNT(*) FROM messages WHERE session_id = ?");
    st.bind(1, session_id).step();
    page.total = st.int64(0);
  }
  static const std::string sql =
      std::string("SELECT ") + message_columns + " FROM messages WHERE session_id = ? ORDER BY seq DESC LIMIT ? OFFSET ?";
  auto st = db_.prepare(sql.c_str());
  st.bind(1, session_id).bind(2, limit).bind(3, offset);
  while (st.step()) page.messages.push_back(read_message(st));
  return page;
}

std::vector<core::message_record> sqlite_store::all_messages(std::string_view session_id) {
  static const std::string sql = std::string("SELECT ") + message_columns + " FROM messages WHERE session_id = ? ORDER BY seq";
  std::vector<core::message_record> out;
  auto st = db_.prepare(sql.c_str());
  st.bind(1, session_id);
  while (st.step()) out.push_back(read_message(st));
  return out;
}

void sqlite_store::upsert_message(const core::message_record& m) {
  db_.prepare(
         "INSERT INTO messages (id, session_id, seq, role, content, tool_calls, tool_call_id, token_count, model_used, "
         "parent_id, status, created_at, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
         "ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, role = excluded.role, content = excluded.content, "
         "tool_calls = excluded.tool_calls, tool_call_id = excluded.tool_call_id, token_count = excluded.token_count, "
         "model_used = excluded.model_used, parent_id = excluded.parent_id, status = excluded.status, "
         "created_at = excluded.created_at, source = excluded.source")
      .bind(1, m.id)
      .bind(2, m.session_id)
      .bind(3, m.seq)
      .bind(4, m.role)
      .bind(5, m.content)
      .bind(6, boost::json::serialize(m.tool_calls))
      .bind(7, m.tool_call_id)
      .bind(8, m.token_count)
      .bind(9, m.model_used)
      .bind(10, m.parent_id)
      .bind(11, m.status)
      .bind(12, m.created_at_ms)
      .bind(13, m.source.empty() ? std::optional<std::string>() : std::optional<std::string>(m.source))
      .run();
}

void sqlite_store::delete_messages(std::string_view session_id) {
  db_.prepare("DELETE FROM messages WHERE session_id = ?").bind(1, session_id).run();
}

void sqlite_store::append_events(const core::event_batch_record& b) {
  // A segment with this first id can only be an earlier attempt of the same frames (ids
  // are never reused once committed): a retry that reaches further replaces it, one that
  // does not changes nothing.
  db_.prepare(
         "INSERT INTO event_batches (session_id, first_id, last_id, frames, created_at) VALUES (?, ?, ?, ?, ?) "
         "ON CONFLICT (session_id, first_id) DO UPDATE SET last_id = excluded.last_id, frames = excluded.frames, "
         "created_at = excluded.created_at WHERE excluded.last_id > event_batches.last_id")
      .bind(1, b.session_id)
      .bind(2, b.first_id)
      .bind(3, b.last_id)
      .bind_blob(4, b.frames)
      .bind(5, b.created_at_ms)
      .run();
}

bool sqlite_store::session_has_thread(std::string_view id, std::string_view thread_id) {
  auto st = db_.prepare("SELECT 1 FROM sessions WHERE id = ? AND thread_id = ?");
  st.bind(1, id).bind(2, thread_id);
  return st.step();
}

std::size_t sqlite_store::fold_journal(const std::filesystem::path& journal_dir) {
  // Every event the journal holds, by session and id: a batch retried after a failed
  // write may be there twice (same frames), and retries need not split alike.
  struct journaled {
    std::map<std::int64_t, core::frame_ptr> frames;  // by id
    std::int64_t created_at_ms = 0;
  };
  std::map<std::string, journaled> sessions;
  // Each session id's incarnation now (its thread id), or none: the session is gone. An
  // entry of an earlier incarnation (deleted, then made again with the id) belongs to
  // nobody.
  std::map<std::string, std::optional<std::string>, std::less<>> current;
  auto incarnation = [&](const std::string& session_id) -> const std::optional<std::string>& {
    auto it = current.find(session_id);
    if (it != current.end()) return it->second;
    auto st = db_.prepare("SELECT thread_id FROM sessions WHERE id = ?");
    st.bind(1, session_id);
    return current.emplace(session_id, st.step() ? std::optional<std::string>(st.text(0)) : std::nullopt).first->second;
  };
  std::size_t records = 0;
  auto absorb = [&](std::string_view entries) {
    ++records;
    for (auto& e : decode_journal_entries(entries)) {
      const auto& now = incarnation(e.batch.session_id);
      if (!now || (!e.thread_id.empty() && e.thread_id != *now)) continue;
      auto& j = sessions[e.batch.session_id];
      j.created_at_ms = std::max(j.created_at_ms, e.batch.created_at_ms);
      for (auto& f : core::decode_log_frames(e.batch.frames, e.batch.first_id)) j.frames[f->id] = std::move(f);
    }
  };
  {
    // The table first: it is older than any journal file.
    auto st = db_.prepare_uncached("SELECT entries FROM event_journal ORDER BY seq");
    while (st.step())
      if (const auto entries = st.text(0); !entries.empty()) absorb(entries);  // empty: an old high-water mark
  }
  journal_file::read(journal_dir, [&](std::uint64_t, std::string_view payload) { absorb(payload); });
  for (auto& [session, j] : sessions) {
    std::int64_t through = 0;
    {
      auto newest = db_.prepare("SELECT last_id FROM event_batches WHERE session_id = ? ORDER BY first_id DESC LIMIT 1");
      newest.bind(1, session);
      if (newest.step()) through = newest.int64(0);
    }
    // The events after the newest segment, in consecutive runs: one segment each.
    std::vector<core::frame_ptr> run;
    auto write = [&] {
      if (run.empty()) return;
      append_events({session, run.front()->id, run.back()->id, core::encode_log_frames(run), j.created_at_ms});
      run.clear();
    };
    for (auto& [id, frame] : j.frames) {
      if (id <= through) continue;  // already in a segment
      if (!run.empty() && id != run.back()->id + 1) write();
      run.push_back(std::move(frame));
    }
    write();
  }
  db_.prepare("DELETE FROM event_journal").run();
  return records;
}

std::vector<core::frame_ptr> sqlite_store::events_after(std::string_view session_id, std::int64_t after_id, std::size_t limit) {
  // The tail first: a segment that takes it over commits before the tail is dropped, so
  // whatever moves meanwhile is seen in one place or both, never in neither.
  auto tail = tails_ ? tails_->after(session_id, after_id, limit) : std::vector<core::frame_ptr>{};
  auto out = segment_events_after(session_id, after_id, limit);
  const std::int64_t last = out.empty() ? after_id : out.back()->id;
  for (auto& f : tail) {
    if (out.size() >= limit) break;
    if (f->id > last) out.push_back(std::move(f));
  }
  return out;
}

std::vector<core::frame_ptr> sqlite_store::segment_events_after(std::string_view session_id, std::int64_t after_id,
                                                                std::size_t limit) {
  std::vector<core::frame_ptr> out;
  // Seek to the batch holding after_id + 1 (batches are contiguous ranges keyed by first_id)
  // rather than scanning the session's log from its start.
  auto st = db_.prepare(
      "SELECT first_id, frames FROM event_batches WHERE session_id = ?1 AND last_id > ?2 AND first_id >= COALESCE("
      "(SELECT first_id FROM event_batches WHERE session_id = ?1 AND first_id <= ?2 + 1 ORDER BY first_id DESC LIMIT 1), 0) "
      "ORDER BY first_id");
  st.bind(1, session_id).bind(2, after_id);
  while (out.size() < limit && st.step()) {
    for (auto& e : core::decode_log_frames(st.text(1), st.int64(0))) {
      if (e->id <= after_id) continue;
      if (out.size() >= limit) break;
      out.push_back(std::move(e));
    }
  }
  return out;
}

std::int64_t sqlite_store::oldest_event_id(std::string_view session_id) {
  const std::int64_t journaled = tails_ ? tails_->oldest_id(session_id) : 0;
  auto st = db_.prepare("SELECT min(first_id) FROM event_batches WHERE session_id = ?");
  st.bind(1, session_id).step();
  return st.is_null(0) ? journaled : st.int64(0);
}

void sqlite_store::trim_events(std::string_view session_id, std::int64_t keep_from_id) {
  // The session's last id is read from its newest segment: keep the sequence where it is
  // should a cut ever take every segment.
  auto newest = db_.prepare("SELECT last_id FROM event_batches WHERE session_id = ? ORDER BY first_id DESC LIMIT 1");
  newest.bind(1, session_id);
  if (newest.step() && newest.int64(0) < keep_from_id)
    db_.prepare("UPDATE sessions SET last_event_id = max(last_event_id, ?) WHERE id = ?")
        .bind(1, newest.int64(0))
        .bind(2, session_id)
        .run();
  db_.prepare("DELETE FROM event_batches WHERE session_id = ? AND last_id < ?").bind(1, session_id).bind(2, keep_from_id).run();
  // The one row the cut goes through keeps only its frames from the cut on: the log then
  // holds exactly what retention keeps, and a resume older than that sees the gap at once.
  std::int64_t first = 0;
  std::string kept;
  {
    auto straddling =
        db_.prepare("SELECT first_id, frames FROM event_batches WHERE session_id = ? AND first_id < ? AND last_id >= ?");
    straddling.bind(1, session_id).bind(2, keep_from_id).bind(3, keep_from_id);
    if (!straddling.step()) return;
    first = straddling.int64(0);
    kept = core::encode_log_suffix(straddling.text(1), first, keep_from_id);
  }
  db_.prepare("UPDATE event_batches SET first_id = ?, frames = ? WHERE session_id = ? AND first_id = ?")
      .bind(1, keep_from_id)
      .bind_blob(2, kept)
      .bind(3, session_id)
      .bind(4, first)
      .run();
}

std::optional<core::idempotency_record> sqlite_store::find_idempotency_key(std::string_view session_id, std::string_view key) {
  auto st = db_.prepare(
      "SELECT session_id, key, content_hash, run_id, first_event_id, created_at FROM idempotency_keys "
      "WHERE session_id = ? AND key = ?");
  st.bind(1, session_id).bind(2, key);
  if (!st.step()) return std::nullopt;
  return core::idempotency_record{st.text(0), st.text(1), st.text(2), st.text(3), st.int64(4), st.int64(5)};
}

void sqlite_store::insert_idempotency_key(const core::idempotency_record& r) {
  db_.prepare(
         "INSERT INTO idempotency_keys (session_id, key, content_hash, run_id, first_event_id, created_at) "
         "VALUES (?, ?, ?, ?, ?, ?)")
      .bind(1, r.session_id)
      .bind(2, r.key)
      .bind(3, r.content_hash)
      .bind(4, r.run_id)
      .bind(5, r.first_event_id)
      .bind(6, r.created_at_ms)
      .run();
}

void sqlite_store::purge_idempotency_keys(std::int64_t older_than_ms) {
  db_.prepare("DELETE FROM idempotency_keys WHERE created_at < ?").bind(1, older_than_ms).run();
}

// --- message queue ---

std::int64_t sqlite_store::enqueue_message(const core::queued_message_record& m) {
  db_.prepare("INSERT INTO queued_messages (id, session_id, content, source, created_at) VALUES (?, ?, ?, ?, ?)")
      .bind(1, m.id)
      .bind(2, m.session_id)
      .bind(3, m.content)
      .bind(4, m.source)
      .bind(5, m.created_at_ms)
      .run();
  return db_.last_insert_rowid();
}

std::vector<core::queued_message_record> sqlite_store::take_queued_messages(std::string_view session_id) {
  std::vector<core::queued_message_record> out;
  auto st = db_.prepare("SELECT id, content, source, created_at, seq FROM queued_messages WHERE session_id = ? ORDER BY seq");
  st.bind(1, session_id);
  while (st.step()) out.push_back({st.text(0), std::string(session_id), st.text(1), st.text(2), st.int64(3), st.int64(4)});
  if (!out.empty()) db_.prepare("DELETE FROM queued_messages WHERE session_id = ?").bind(1, session_id).run();
  return out;
}

std::int64_t sqlite_store::queued_message_count(std::string_view session_id) {
  auto st = db_.prepare("SELECT COUNT(*) FROM queued_messages WHERE session_id = ?");
  st.bind(1, session_id);
  st.step();
  return st.int64(0);
}

// --- webhook outbox ---

namespace {

// A macro so that queries stay single string literals (the statement cache is keyed by their address).
#define AGW_DELIVERY_COLUMNS \
  "id, webhook_id, session_id, run_id, url, payload, status, attempt_count, next_attempt_at, created_at"

core::webhook_delivery_record read_delivery(const statement& st) {
  core::webhook_delivery_record d;
  d.id = st.text(0);
  d.webhook_id = st.text(1);
  d.session_id = st.text(2);
  d.run_id = st.text(3);
  d.url = st.text(4);
  d.payload = st.text(5);
  d.status = st.text(6);
  d.round_attempts = st.int64(7);
  d.next_attempt_at_ms = st.optional_int64(8);
  d.created_at_ms = st.int64(9);
  return d;
}

}  // namespace

void sqlite_store::insert_webhook_delivery(const core::webhook_delivery_record& d) {
  db_.prepare("INSERT INTO webhook_deliveries (" AGW_DELIVERY_COLUMNS
              ", event_first_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .bind(1, d.id)
      .bind(2, d.webhook_id)
      .bind(3, d.session_id)
      .bind(4, d.run_id)
      .bind(5, d.url)
      .bind(6, d.payload)
      .bind(7, d.status)
      .bind(8, d.round_attempts)
      .bind(9, d.next_attempt_at_ms)
      .bind(10, d.created_at_ms)
      .bind(11, d.event_first_id)
      .run();
}

void sqlite_store::insert_session_notice(const core::webhook_delivery_record& d) {
  db_.prepare(
         "INSERT INTO session_notices (id, webhook_id, session_id, url, payload, status, attempt_count, next_attempt_at, "
         "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .bind(1, d.id)
      .bind(2, d.webhook_id)
      .bind(3, d.session_id)
      .bind(4, d.url)
      .bind(5, d.payload)
      .bind(6, d.status)
      .bind(7, d.round_attempts)
      .bind(8, d.next_attempt_at_ms)
      .bind(9, d.created_at_ms)
      .run();
}

std::vector<core::webhook_delivery_record> sqlite_store::list_webhook_deliveries(std::string_view session_id) {
  // The deliveries and their attempts as of one commit: an attempt is recorded with its
  // delivery's new state in one transaction, and a listing must not show half of it.
  const read_snapshot snapshot(*this);
  std::vector<core::webhook_delivery_record> out;
  {
    auto st = db_.prepare("SELECT " AGW_DELIVERY_COLUMNS
                          " "
                          "FROM webhook_deliveries WHERE session_id = ? ORDER BY created_at, rowid");
    st.bind(1, session_id);
    while (st.step()) out.push_back(read_delivery(st));
  }
  for (auto& d : out) {
    auto st = db_.prepare(
        "SELECT attempt, at, status_code, error, duration_ms FROM webhook_attempts WHERE delivery_id = ? ORDER BY attempt");
    st.bind(1, d.id);
    while (st.step()) {
      auto code = st.optional_int64(2);
      d.attempts.push_back({st.int64(0), st.int64(1), code ? std::optional<int>(static_cast<int>(*code)) : std::nullopt,
                            st.optional_text(3), st.int64(4)});
    }
  }
  return out;
}

std::optional<core::webhook_delivery_record> sqlite_store::find_webhook_delivery(std::string_view session_id,
                                                                                 std::string_view delivery_id) {
  auto st = db_.prepare("SELECT " AGW_DELIVERY_COLUMNS
                        " "
                        "FROM webhook_deliveries WHERE session_id = ? AND id = ?");
  st.bind(1, session_id).bind(2, delivery_id);
  if (!st.step()) return std::nullopt;
  return read_delivery(st);
}

std::vector<core::webhook_delivery_record> sqlite_store::claim_due_webhook_deliveries(std::int64_t now_ms,
                                                                                      std::int64_t claim_until_ms,
                                                                                      std::size_t limit) {
  // One process holds the file and this runs on its writer connection: the select and the
  // claim below cannot interleave with another claim (migration 8).
  auto st = db_.prepare(
      "SELECT " AGW_DELIVERY_COLUMNS
      " FROM webhook_deliveries d WHERE status = 'pending' AND next_attempt_at <= ?1 "
      "AND (claimed_until IS NULL OR claimed_until <= ?1) "
      // An event batch waits for the session's earlier batches (migration 6): in order.
      "AND (d.event_first_id IS NULL OR NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE "
      "e.session_id = d.session_id AND e.status = 'pending' AND e.event_first_id < d.event_first_id)) "
      // And the notices that outlived their session (migration 6).
      "UNION ALL SELECT id, webhook_id, session_id, '', url, payload, status, attempt_count, next_attempt_at, created_at "
      "FROM session_notices WHERE status = 'pending' AND next_attempt_at <= ?1 "
      "AND (claimed_until IS NULL OR claimed_until <= ?1) "
      "ORDER BY next_attempt_at LIMIT ?2");
  st.bind(1, now_ms).bind(2, static_cast<std::int64_t>(limit));
  std::vector<core::webhook_delivery_record> out;
  while (st.step()) out.push_back(read_delivery(st));
  for (const auto& d : out) {
    // A delivery's id is in one table or the other.
    db_.prepare("UPDATE webhook_deliveries SET claimed_until = ? WHERE id = ?").bind(1, claim_until_ms).bind(2, d.id).run();
    if (db_.changes() == 0)
      db_.prepare("UPDATE session_notices SET claimed_until = ? WHERE id = ?").bind(1, claim_until_ms).bind(2, d.id).run();
  }
  return out;
}

std::optional<std::int64_t> sqlite_store::next_webhook_due_ms(std::int64_t after_ms) {
  // Due at its schedule, or when a claim on it ends (max(): NULL-free here, claimed_until
  // taken as 0 when there is none).
  auto st = db_.prepare(
      "SELECT MIN(t) FROM (SELECT MIN(max(next_attempt_at, COALESCE(claimed_until, 0))) AS t FROM webhook_deliveries "
      "WHERE status = 'pending' AND max(next_attempt_at, COALESCE(claimed_until, 0)) > ?1 "
      "UNION ALL SELECT MIN(max(next_attempt_at, COALESCE(claimed_until, 0))) FROM session_notices WHERE status = "
      "'pending' AND max(next_attempt_at, COALESCE(claimed_until, 0)) > ?1)");
  st.bind(1, after_ms);
  if (!st.step()) return std::nullopt;
  return st.optional_int64(0);
}

void sqlite_store::release_webhook_claims() {
  db_.exec("UPDATE webhook_deliveries SET claimed_until = NULL WHERE claimed_until IS NOT NULL");
  db_.exec("UPDATE session_notices SET claimed_until = NULL WHERE claimed_until IS NOT NULL");
}

bool sqlite_store::try_lead(std::string_view) { return true; }  // one process per file: it always leads

bool sqlite_store::record_webhook_attempt(const core::webhook_attempt_outcome& o) {
  db_.prepare(
         "UPDATE webhook_deliveries SET status = ?, attempt_count = attempt_count + 1, next_attempt_at = ?, "
         "claimed_until = NULL WHERE id = ? AND status = 'pending'")
      .bind(1, o.status)
      .bind(2, o.next_attempt_at_ms)
      .bind(3, o.delivery_id)
      .run();
  if (db_.changes() == 0) {
    // A notice that outlived its session: its state moves on, its attempts are not kept.
    db_.prepare(
           "UPDATE session_notices SET status = ?, attempt_count = attempt_count + 1, next_attempt_at = ?, "
           "claimed_until = NULL WHERE id = ? AND status = 'pending'")
        .bind(1, o.status)
        .bind(2, o.next_attempt_at_ms)
        .bind(3, o.delivery_id)
        .run();
    return db_.changes() > 0;
  }
  std::optional<std::int64_t> code;
  if (o.attempt.status_code) code = *o.attempt.status_code;
  db_.prepare(
         "INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, error, duration_ms) "
         "VALUES (?1, (SELECT COALESCE(MAX(attempt), 0) + 1 FROM webhook_attempts WHERE delivery_id = ?1), ?2, ?3, ?4, ?5)")
      .bind(1, o.delivery_id)
      .bind(2, o.attempt.at_ms)
      .bind(3, code)
      .bind(4, o.attempt.error)
      .bind(5, o.attempt.duration_ms)
      .run();
  return true;
}

bool sqlite_store::requeue_webhook_delivery(std::string_view delivery_id, std::int64_t now_ms) {
  db_.prepare(
         "UPDATE webhook_deliveries SET status = 'pending', attempt_count = 0, next_attempt_at = ?, claimed_until = NULL "
         "WHERE id = ?")
      .bind(1, now_ms)
      .bind(2, delivery_id)
      .run();
  return db_.changes() > 0;
}

#undef AGW_DELIVERY_COLUMNS

}  // namespace agw::persistence
