#include "persistence/postgres/pg_migrations.hpp"

#include <array>

#include "core/storage/store_error.hpp"

namespace agw::persistence::pg {
namespace {

// Never edit a shipped migration: add a new one. Times are ms since the epoch. New
// SQLite migrations (new session columns) get their PostgreSQL twin appended here.
constexpr std::array migrations = {
    // 1: what SQLite's migrations 1-4 leave, in one step.
    R"sql(
CREATE TABLE sessions (
  seq           BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,  -- insertion order (SQLite's rowid)
  id            TEXT PRIMARY KEY,
  thread_id     TEXT NOT NULL UNIQUE,
  title         TEXT,
  status        TEXT NOT NULL CHECK (status IN ('active', 'inactive', 'error')),
  agent_name    TEXT NOT NULL,
  config        TEXT NOT NULL,
  scopes        TEXT NOT NULL,
  metadata      TEXT NOT NULL,
  created_at    BIGINT NOT NULL,
  updated_at    BIGINT NOT NULL,
  last_event_id BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX sessions_newest ON sessions (created_at DESC, seq DESC);

CREATE TABLE session_labels (
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  kind       TEXT NOT NULL CHECK (kind IN ('metadata', 'scopes')),
  key        TEXT NOT NULL,
  value      TEXT NOT NULL,
  PRIMARY KEY (session_id, kind, key)
);
CREATE INDEX session_labels_lookup ON session_labels (kind, key, value);

-- The messages projection; counted by an index-only scan of (session_id, seq).
CREATE TABLE messages (
  id           TEXT PRIMARY KEY,
  session_id   TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  seq          BIGINT NOT NULL,
  role         TEXT NOT NULL,
  content      TEXT NOT NULL,
  tool_calls   TEXT NOT NULL DEFAULT '[]',
  tool_call_id TEXT,
  token_count  BIGINT,
  model_used   TEXT,
  parent_id    TEXT,
  status       TEXT NOT NULL,
  created_at   BIGINT NOT NULL,
  UNIQUE (session_id, seq)
);

-- Checkpoints as core/checkpoint_chain.hpp lays them out (SQLite's migration 3).
CREATE TABLE checkpoints (
  thread_id      TEXT NOT NULL,
  version        BIGINT NOT NULL,
  session_id     TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  kind           TEXT NOT NULL CHECK (kind IN ('snapshot', 'delta')),
  message_count  BIGINT NOT NULL,
  delta_bytes    BIGINT NOT NULL,
  snapshot_bytes BIGINT NOT NULL,
  created_at     BIGINT NOT NULL,
  state          TEXT NOT NULL,
  PRIMARY KEY (thread_id, version)
);
CREATE INDEX checkpoints_session ON checkpoints (session_id);

-- The durable event log: each row holds the encoded events first_id..last_id
-- (core/events/log_codec.hpp). No journal: PostgreSQL's WAL already makes a commit
-- of many sessions' rows one sequential write.
CREATE TABLE event_batches (
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  first_id   BIGINT NOT NULL,
  last_id    BIGINT NOT NULL,
  frames     BYTEA NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (session_id, first_id)
);

CREATE TABLE idempotency_keys (
  session_id     TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  key            TEXT NOT NULL,
  content_hash   TEXT NOT NULL,
  run_id         TEXT NOT NULL,
  first_event_id BIGINT NOT NULL,
  created_at     BIGINT NOT NULL,
  PRIMARY KEY (session_id, key)
);
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);

CREATE TABLE webhook_deliveries (
  seq             BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
  id              TEXT PRIMARY KEY,
  webhook_id      TEXT NOT NULL UNIQUE,
  session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  run_id          TEXT NOT NULL,
  url             TEXT NOT NULL,
  payload         TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempt_count   BIGINT NOT NULL DEFAULT 0,
  next_attempt_at BIGINT,
  created_at      BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_session ON webhook_deliveries (session_id);
CREATE TABLE webhook_attempts (
  delivery_id TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt     BIGINT NOT NULL,
  at          BIGINT NOT NULL,
  status_code BIGINT,
  error       TEXT,
  duration_ms BIGINT NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
);
)sql",
    // 2: run ownership across nodes (pg_run_leases.hpp). One row per session that ever
    //    had a leased run; `token` only grows (the fencing token), run_id/node_id are
    //    NULL when no run holds it.
    R"sql(
CREATE TABLE run_leases (
  session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
  run_id     TEXT,
  node_id    TEXT,
  token      BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX run_leases_expiry ON run_leases (expires_at) WHERE run_id IS NOT NULL;
)sql",
    // 3: SQLite's migrations 5 (the session timeline) and 6 (session attributes) in one
    //    step, with the same meaning (persistence/migrations.cpp says what each is):
    //    messages.source (NULL: before sources, read by role), sessions.mode, the
    //    queued_messages queue, the attributes' columns, the label index, the state
    //    scopes, event_first_id on deliveries and the session_notices that outlive their
    //    session. SQLite's two triggers are PL/pgSQL ones: a message inserted moves its
    //    session's active_at forward; a session deleted takes its 'session' state keys.
    R"sql(
ALTER TABLE messages ADD COLUMN source TEXT;
ALTER TABLE sessions ADD COLUMN mode TEXT NOT NULL DEFAULT 'auto' CHECK (mode IN ('auto', 'manual'));
CREATE TABLE queued_messages (
  seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id         TEXT NOT NULL UNIQUE,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  content    TEXT NOT NULL,
  source     TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX queued_messages_session ON queued_messages (session_id, seq);

ALTER TABLE sessions ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
ALTER TABLE sessions ADD COLUMN variables TEXT NOT NULL DEFAULT '{}';
ALTER TABLE sessions ADD COLUMN ttl_seconds BIGINT;
ALTER TABLE sessions ADD COLUMN active_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN event_webhook_url TEXT;
ALTER TABLE sessions ADD COLUMN event_webhook_cursor BIGINT NOT NULL DEFAULT 0;
CREATE INDEX sessions_event_webhooks ON sessions (id) WHERE event_webhook_url IS NOT NULL;
ALTER TABLE webhook_deliveries ADD COLUMN event_first_id BIGINT;
CREATE INDEX webhook_deliveries_event_batches ON webhook_deliveries (session_id, event_first_id)
  WHERE status = 'pending' AND event_first_id IS NOT NULL;
UPDATE sessions SET active_at = GREATEST(updated_at,
  COALESCE((SELECT max(m.created_at) FROM messages m WHERE m.session_id = sessions.id), 0));
CREATE INDEX sessions_active ON sessions (active_at);

CREATE TABLE session_label_index (
  label      TEXT NOT NULL,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  PRIMARY KEY (label, session_id)
);
CREATE INDEX session_label_index_session ON session_label_index (session_id);

CREATE FUNCTION messages_touch_session() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE sessions SET active_at = NEW.created_at WHERE id = NEW.session_id AND active_at < NEW.created_at;
  RETURN NULL;
END
$$;
CREATE TRIGGER messages_touch_session AFTER INSERT ON messages
  FOR EACH ROW EXECUTE FUNCTION messages_touch_session();

CREATE TABLE session_state (
  scope      TEXT NOT NULL CHECK (scope IN ('session', 'user', 'app')),
  owner      TEXT NOT NULL,
  key        TEXT NOT NULL,
  value      TEXT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (scope, owner, key)
);
CREATE FUNCTION sessions_drop_state() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM session_state WHERE scope = 'session' AND owner = OLD.id;
  RETURN NULL;
END
$$;
CREATE TRIGGER sessions_drop_state AFTER DELETE ON sessions
  FOR EACH ROW EXECUTE FUNCTION sessions_drop_state();

-- Deliveries that outlive their session (session.expired): no foreign key, the
-- delivery's columns; the dispatcher reads both tables.
CREATE TABLE session_notices (
  id              TEXT PRIMARY KEY,
  webhook_id      TEXT NOT NULL UNIQUE,
  session_id      TEXT NOT NULL,
  url             TEXT NOT NULL,
  payload         TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempt_count   BIGINT NOT NULL DEFAULT 0,
  next_attempt_at BIGINT,
  created_at      BIGINT NOT NULL
);
CREATE INDEX session_notices_due ON session_notices (status, next_attempt_at);
)sql",
    // 4: webhook claims (docs/scale-out.md, "Webhooks"; SQLite's migration 8): a
    //    delivery or notice a node's dispatcher took is claimed until claimed_until
    //    (NULL: not claimed) by the node claimed_by; other nodes skip it until then, or
    //    until its attempt is recorded (which clears it). A node that dies mid-attempt
    //    leaves it to expire, or releases it when it starts again under its node id.
    R"sql(
ALTER TABLE webhook_deliveries ADD COLUMN claimed_until BIGINT, ADD COLUMN claimed_by TEXT;
ALTER TABLE session_notices ADD COLUMN claimed_until BIGINT, ADD COLUMN claimed_by TEXT;
)sql",
    // 5: an abort posted on a node that does not own the run (docs/scale-out.md): the
    //    request is recorded on the run's lease row, which the owner reads at its next
    //    renewal.
    R"sql(
ALTER TABLE run_leases ADD COLUMN abort_requested BOOLEAN NOT NULL DEFAULT false;
)sql",
    // 6: a run whose done is in the log (pg_run_leases.hpp, mark_run_ended): its lease
    //    may be taken by any node from then on, before its owner releases it.
    R"sql(
ALTER TABLE run_leases ADD COLUMN run_ended BOOLEAN NOT NULL DEFAULT false;
)sql",
};

}  // namespace

int schema_version() { return static_cast<int>(migrations.size()); }

void migrate(connection& c) {
  c.exec("BEGIN");
  try {
    // Nodes starting together migrate one after the other; the lock goes with the transaction.
    c.exec("SELECT pg_advisory_xact_lock(7438151)");
    c.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
    auto r = c.run_once("SELECT max(version) FROM schema_version");
    const int current = r.is_null(0, 0) ? 0 : static_cast<int>(r.int64(0, 0));
    if (current > schema_version())
      throw core::store_error("database schema version " + std::to_string(current) + " is newer than this binary's " +
                              std::to_string(schema_version()));
    for (int v = current; v < schema_version(); ++v) {
      c.exec(migrations[static_cast<std::size_t>(v)]);
      c.exec("INSERT INTO schema_version (version) VALUES (" + std::to_string(v + 1) + ")");
    }
    c.exec("COMMIT");
  } catch (...) {
    c.exec("ROLLBACK");
    throw;
  }
}

}  // namespace agw::persistence::pg
