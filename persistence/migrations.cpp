#include "persistence/migrations.hpp"

#include <array>

#include "core/storage/store_error.hpp"

namespace agw::persistence {
namespace {

// Never edit a shipped migration: add a new one. Times are ms since the epoch.
constexpr std::array migrations = {
    // 1: sessions, labels for filtering, messages projection, checkpoints,
    //    event log batches, idempotency keys, webhook outbox.
    R"sql(
CREATE TABLE sessions (
  id            TEXT PRIMARY KEY,
  thread_id     TEXT NOT NULL UNIQUE,
  title         TEXT,
  status        TEXT NOT NULL CHECK (status IN ('active', 'inactive', 'error')),
  agent_name    TEXT NOT NULL,
  config        TEXT NOT NULL,
  scopes        TEXT NOT NULL,
  metadata      TEXT NOT NULL,
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL,
  last_event_id INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_newest ON sessions (created_at DESC);

-- One row per metadata/scopes entry, so filters are indexed equality lookups.
CREATE TABLE session_labels (
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  kind       TEXT NOT NULL CHECK (kind IN ('metadata', 'scopes')),
  key        TEXT NOT NULL,
  value      TEXT NOT NULL,
  PRIMARY KEY (session_id, kind, key)
) WITHOUT ROWID;
CREATE INDEX session_labels_lookup ON session_labels (kind, key, value);

-- The projection of the latest checkpoint that the REST API reads.
CREATE TABLE messages (
  id           TEXT PRIMARY KEY,
  session_id   TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  seq          INTEGER NOT NULL,
  role         TEXT NOT NULL,
  content      TEXT NOT NULL,
  tool_calls   TEXT NOT NULL DEFAULT '[]',
  tool_call_id TEXT,
  token_count  INTEGER,
  model_used   TEXT,
  parent_id    TEXT,
  status       TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  UNIQUE (session_id, seq)
);

-- Authoritative conversation state per thread; the newest version wins.
CREATE TABLE checkpoints (
  thread_id  TEXT NOT NULL,
  version    INTEGER NOT NULL,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  state      TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (thread_id, version)
) WITHOUT ROWID;
CREATE INDEX checkpoints_session ON checkpoints (session_id);

-- The durable event log: each row holds the serialized frames first_id..last_id.
CREATE TABLE event_batches (
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  first_id   INTEGER NOT NULL,
  last_id    INTEGER NOT NULL,
  frames     BLOB NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, first_id)
) WITHOUT ROWID;

CREATE TABLE idempotency_keys (
  session_id     TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  key            TEXT NOT NULL,
  content_hash   TEXT NOT NULL,
  run_id         TEXT NOT NULL,
  first_event_id INTEGER NOT NULL,
  created_at     INTEGER NOT NULL,
  PRIMARY KEY (session_id, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);

-- Completion callbacks: an outbox row per delivery, one row per attempt.
CREATE TABLE webhook_deliveries (
  id              TEXT PRIMARY KEY,
  webhook_id      TEXT NOT NULL UNIQUE,
  session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  run_id          TEXT NOT NULL,
  url             TEXT NOT NULL,
  payload         TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempt_count   INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  created_at      INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_session ON webhook_deliveries (session_id);
CREATE TABLE webhook_attempts (
  delivery_id TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt     INTEGER NOT NULL,
  at          INTEGER NOT NULL,
  status_code INTEGER,
  error       TEXT,
  duration_ms INTEGER NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
) WITHOUT ROWID;
)sql",
    // 2: the event journal. The small batches of every session that one writer cycle
    //    commits (a paced run's single tokens) share one row, appended in commit order:
    //    a commit writes a few adjacent pages however many sessions it carries. Each
    //    session later moves its journaled frames into one event_batches row (a
    //    segment), and the journal is cut below the oldest row some session still needs
    //    (docs/streaming.md, "The event log"). `entries` is journal_codec's encoding. No
    //    index: it is written at every commit, read only at start-up. AUTOINCREMENT: a
    //    seq is never handed out again, even after the journal was emptied, so a claim
    //    on a seq always covers every later row.
    //    event_batches becomes a rowid table: its rows (segments, a few KiB) are
    //    appended in commit order and stay in their leaf page, where a WITHOUT ROWID
    //    row over ~1 KiB spilled into overflow pages scattered per session; only the
    //    small (session_id, first_id) index entries go by session. checkpoints, whose
    //    rows (a whole conversation) are larger still, likewise.
    R"sql(
CREATE TABLE event_journal (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  entries    BLOB NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE event_segments (
  seq        INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  first_id   INTEGER NOT NULL,
  last_id    INTEGER NOT NULL,
  frames     BLOB NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (session_id, first_id)
);
INSERT INTO event_segments (session_id, first_id, last_id, frames, created_at)
  SELECT session_id, first_id, last_id, frames, created_at FROM event_batches ORDER BY created_at, session_id, first_id;
DROP TABLE event_batches;
ALTER TABLE event_segments RENAME TO event_batches;
CREATE TABLE checkpoints_by_seq (
  seq        INTEGER PRIMARY KEY,
  thread_id  TEXT NOT NULL,
  version    INTEGER NOT NULL,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  state      TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (thread_id, version)
);
INSERT INTO checkpoints_by_seq (thread_id, version, session_id, state, created_at)
  SELECT thread_id, version, session_id, state, created_at FROM checkpoints ORDER BY created_at, thread_id, version;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_by_seq RENAME TO checkpoints;
CREATE INDEX checkpoints_session ON checkpoints (session_id);
)sql",
    // 3: checkpoints cost what a version adds (core/checkpoint_chain.hpp). A row is a
    //    whole-state snapshot or a delta on the version before; the newest state is the
    //    newest snapshot and the deltas after it, and a new snapshot drops the rows below
    //    it. message_count (to refuse a delta that does not fit) and delta_bytes/
    //    snapshot_bytes (the chain's sizes, for the snapshot rule) come before `state`, so
    //    reading them never walks a large row's overflow pages (-1: a count not known, a
    //    row that is not a readable conversation). Every existing row held a whole state:
    //    the newest of each thread becomes its snapshot, the older ones (never read) go.
    //    Each session's message count is kept in message_counts, exact by triggers on the
    //    messages projection: counting the rows at every session lookup (each POST) read
    //    the whole conversation, a cost that grew with it. (Idempotent: tests rebuild old
    //    versions from the current schema.)
    R"sql(
CREATE TABLE checkpoint_rows (
  seq            INTEGER PRIMARY KEY,
  thread_id      TEXT NOT NULL,
  version        INTEGER NOT NULL,
  session_id     TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  kind           TEXT NOT NULL CHECK (kind IN ('snapshot', 'delta')),
  message_count  INTEGER NOT NULL,
  delta_bytes    INTEGER NOT NULL,
  snapshot_bytes INTEGER NOT NULL,
  created_at     INTEGER NOT NULL,
  state          TEXT NOT NULL,
  UNIQUE (thread_id, version)
);
INSERT INTO checkpoint_rows (thread_id, version, session_id, kind, message_count, delta_bytes, snapshot_bytes, created_at,
                             state)
  SELECT c.thread_id, c.version, c.session_id, 'snapshot',
         CASE WHEN json_valid(c.state) THEN COALESCE(json_array_length(c.state, '$.messages'), -1) ELSE -1 END,
         0, length(CAST(c.state AS BLOB)), c.created_at, c.state
  FROM checkpoints c
  WHERE c.version = (SELECT max(n.version) FROM checkpoints n WHERE n.thread_id = c.thread_id)
  ORDER BY c.seq;
DROP TABLE checkpoints;
ALTER TABLE checkpoint_rows RENAME TO checkpoints;
CREATE INDEX checkpoints_session ON checkpoints (session_id);
CREATE TABLE IF NOT EXISTS message_counts (
  session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
  n          INTEGER NOT NULL
) WITHOUT ROWID;
INSERT OR REPLACE INTO message_counts (session_id, n) SELECT session_id, COUNT(*) FROM messages GROUP BY session_id;
CREATE TRIGGER IF NOT EXISTS messages_counted_in AFTER INSERT ON messages BEGIN
  INSERT INTO message_counts (session_id, n) VALUES (NEW.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS messages_counted_out AFTER DELETE ON messages BEGIN
  UPDATE message_counts SET n = n - 1 WHERE session_id = OLD.session_id;
END;
)sql",
    // 4: a checkpoint row costs its own page and the (thread_id, version) index, no more.
    //    The session_id index existed only for ON DELETE CASCADE, and cost a page write
    //    per row (a tenth of a sustained run's WAL: docs/streaming.md, "Bytes per run").
    //    The cascade is now a trigger through the thread_id index, and a row whose
    //    session is gone is refused as the foreign key refused it (a run's last
    //    checkpoint racing its session's delete). (Idempotent, as 3.)
    R"sql(
CREATE TABLE checkpoint_rows (
  seq            INTEGER PRIMARY KEY,
  thread_id      TEXT NOT NULL,
  version        INTEGER NOT NULL,
  session_id     TEXT NOT NULL,
  kind           TEXT NOT NULL CHECK (kind IN ('snapshot', 'delta')),
  message_count  INTEGER NOT NULL,
  delta_bytes    INTEGER NOT NULL,
  snapshot_bytes INTEGER NOT NULL,
  created_at     INTEGER NOT NULL,
  state          TEXT NOT NULL,
  UNIQUE (thread_id, version)
);
INSERT INTO checkpoint_rows (seq, thread_id, version, session_id, kind, message_count, delta_bytes, snapshot_bytes,
                             created_at, state)
  SELECT seq, thread_id, version, session_id, kind, message_count, delta_bytes, snapshot_bytes, created_at, state
  FROM checkpoints ORDER BY seq;
DROP TABLE checkpoints;
ALTER TABLE checkpoint_rows RENAME TO checkpoints;
CREATE TRIGGER checkpoints_need_session BEFORE INSERT ON checkpoints
  WHEN NOT EXISTS (SELECT 1 FROM sessions WHERE id = NEW.session_id)
BEGIN
  SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: checkpoints.session_id');
END;
CREATE TRIGGER IF NOT EXISTS sessions_drop_checkpoints AFTER DELETE ON sessions BEGIN
  DELETE FROM checkpoints WHERE thread_id = OLD.thread_id;
END;
)sql",
    // 5: the session timeline (docs/timeline.md): who wrote each message (NULL: before
    //    sources, read by role), the session's mode (auto: the agent answers; manual: a
    //    human operator does), and messages queued while a run was live (multitask
    //    enqueue), kept until the next run takes them, in arrival order (seq). seq is
    //    AUTOINCREMENT: a channel starts the queue's run when a seq above the newest it
    //    took is queued, so a seq handed out again after a take would never be answered.
    R"sql(
ALTER TABLE messages ADD COLUMN source TEXT;
ALTER TABLE sessions ADD COLUMN mode TEXT NOT NULL DEFAULT 'auto' CHECK (mode IN ('auto', 'manual'));
CREATE TABLE queued_messages (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  id         TEXT NOT NULL UNIQUE,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  content    TEXT NOT NULL,
  source     TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX queued_messages_session ON queued_messages (session_id, seq);
)sql",
    // 6: session attributes (docs/sessions.md). Columns added, none rewritten:
    //    labels/variables as JSON (labels a sorted array), the per-session TTL (NULL: the
    //    process default, 0: never) and the last activity it counts from (active_at: the
    //    create, a PATCH, a message stored, kept by a trigger on messages), the event
    //    webhook's URL and how far its events are in the outbox (event_webhook_cursor);
    //    an outbox row of an event batch names its first event id (event_first_id), so
    //    the dispatcher sends a session's batches in order. session_label_index holds one row per label so GET /sessions?label=
    //    is an indexed lookup (the existing session_labels table is CHECKed to metadata and
    //    scopes). session_state holds the persisted state scopes: 'session' keys owned by a
    //    session (deleted with it), 'user' keys by a tenant + scopes.user, 'app' keys by a
    //    tenant (temp: keys are never stored).
    R"sql(
ALTER TABLE sessions ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
ALTER TABLE sessions ADD COLUMN variables TEXT NOT NULL DEFAULT '{}';
ALTER TABLE sessions ADD COLUMN ttl_seconds INTEGER;
ALTER TABLE sessions ADD COLUMN active_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN event_webhook_url TEXT;
ALTER TABLE sessions ADD COLUMN event_webhook_cursor INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_event_webhooks ON sessions (id) WHERE event_webhook_url IS NOT NULL;
ALTER TABLE webhook_deliveries ADD COLUMN event_first_id INTEGER;
UPDATE sessions SET active_at = max(updated_at, COALESCE((SELECT max(m.created_at) FROM messages m WHERE m.session_id = sessions.id), 0));
CREATE INDEX sessions_active ON sessions (active_at);
CREATE TABLE session_label_index (
  label      TEXT NOT NULL,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  PRIMARY KEY (label, session_id)
) WITHOUT ROWID;
CREATE INDEX session_label_index_session ON session_label_index (session_id);
CREATE TRIGGER messages_touch_session AFTER INSERT ON messages BEGIN
  UPDATE sessions SET active_at = NEW.created_at WHERE id = NEW.session_id AND active_at < NEW.created_at;
END;
CREATE TABLE session_state (
  scope      TEXT NOT NULL CHECK (scope IN ('session', 'user', 'app')),
  owner      TEXT NOT NULL,
  key        TEXT NOT NULL,
  value      TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (scope, owner, key)
) WITHOUT ROWID;
CREATE TRIGGER sessions_drop_state AFTER DELETE ON sessions BEGIN
  DELETE FROM session_state WHERE scope = 'session' AND owner = OLD.id;
END;
-- Deliveries that outlive their session (session.expired, written with the expiry
-- that deletes the session's own webhook_deliveries rows): no foreign key, the same
-- columns; the dispatcher reads both tables.
CREATE TABLE session_notices (
  id              TEXT PRIMARY KEY,
  webhook_id      TEXT NOT NULL UNIQUE,
  session_id      TEXT NOT NULL,
  url             TEXT NOT NULL,
  payload         TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempt_count   INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  created_at      INTEGER NOT NULL
);
CREATE INDEX session_notices_due ON session_notices (status, next_attempt_at);
)sql",
    // 7: the journal without AUTOINCREMENT. AUTOINCREMENT keeps its high-water mark in
    //    sqlite_sequence, a row rewritten at every insert: one more page in every writer
    //    commit, 13 % of a paced run's WAL frames (docs/streaming.md, "The event log").
    //    A seq is still never handed out again: the journal's cuts and the start-up fold
    //    always keep its newest row, so max(seq) + 1, SQLite's next rowid, never falls.
    R"sql(
CREATE TABLE event_journal_rows (
  seq        INTEGER PRIMARY KEY,
  entries    BLOB NOT NULL,
  created_at INTEGER NOT NULL
);
INSERT INTO event_journal_rows (seq, entries, created_at) SELECT seq, entries, created_at FROM event_journal ORDER BY seq;
INSERT INTO event_journal_rows (seq, entries, created_at)
  SELECT seq, X'', 0 FROM sqlite_sequence
  WHERE name = 'event_journal' AND seq > (SELECT coalesce(max(seq), 0) FROM event_journal_rows);
DROP TABLE event_journal;
ALTER TABLE event_journal_rows RENAME TO event_journal;
DELETE FROM sqlite_sequence WHERE name = 'event_journal';
)sql",
    // 8: webhook claims (docs/scale-out.md, "Webhooks"): a delivery (or notice) handed to
    //    the dispatcher is claimed until claimed_until (NULL: not claimed), and is not
    //    handed out again before that unless its attempt is recorded. One process uses a
    //    SQLite file, so this mirrors the PostgreSQL store (its migration 4); start-up
    //    repair releases the claims of the process before.
    R"sql(
ALTER TABLE webhook_deliveries ADD COLUMN claimed_until INTEGER;
ALTER TABLE session_notices ADD COLUMN claimed_until INTEGER;
)sql",
};

int user_version(sqlite_database& db) {
  auto st = db.prepare("PRAGMA user_version");
  st.step();
  return static_cast<int>(st.int64(0));
}

}  // namespace

int schema_version() { return static_cast<int>(migrations.size()); }

void migrate(sqlite_database& db) {
  int current = user_version(db);
  if (current > schema_version())
    throw core::store_error("database schema version " + std::to_string(current) + " is newer than this binary's " +
                            std::to_string(schema_version()));
  for (int v = current; v < schema_version(); ++v) {
    db.exec("BEGIN IMMEDIATE");
    try {
      db.exec(migrations[static_cast<std::size_t>(v)]);
      db.exec(("PRAGMA user_version = " + std::to_string(v + 1)).c_str());
      db.exec("COMMIT");
    } catch (...) {
      db.exec("ROLLBACK");
      throw;
    }
  }
}

}  // namespace agw::persistence
