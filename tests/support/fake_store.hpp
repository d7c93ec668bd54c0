#pragma once
// An in-memory core::store_connection for unit tests of the store executor and
// of everything built on it (session_channel, ...).
//
// fake_db is the "database file": committed state shared by every connection,
// plus counters, a call log and fault injection. fake_connection is one
// connection: like SQLite, a batch works on a private copy that only
// commit_batch() publishes, and savepoints snapshot that copy. Operations
// outside a batch read and write the committed state directly (autocommit).
//
// It answers like SQLite (tests/ports pins both to the same contracts): the
// same constraints refused with store_error (unique ids, one thread per session,
// the status CHECK), the same cascades on delete, the same orders. Rows of an
// unknown session are refused only with `foreign_keys` on (tests/ports does): like
// SQLite's PRAGMA, it is off by default, because core's channel tests write events
// for sessions they never create.
//
// Fault injection (all thread-safe, set before or while the executor runs):
//   throw_on_job(n)     the n-th job (counted by savepoint() calls, 1-based) throws
//                       store_error from its first store operation;
//   fail_commits(k)     the next k commit_batch() calls throw (and roll back);
//   fail_commit_number(n)  the n-th commit_batch() call (1-based, all connections) throws;
//   hold_commits()      commit_batch() blocks until release_commits();
//   op_delay / read_delay / commit_delay   sleep in every operation / every
//                       operation outside a batch / every commit;
//   fail_reads          operations outside a batch throw store_error.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/events/log_codec.hpp"
#include "core/events/sse_format.hpp"
#include "core/storage/store_connection.hpp"
#include "core/store_executor.hpp"  // factory()
#include "tests/support/fake_checkpoints.hpp"

namespace agw::test {

// Everything a store holds. Plain values, so a batch or savepoint is a copy.
struct fake_data {
  std::map<std::string, core::session_record, std::less<>> sessions;
  // Insertion order of the sessions (SQLite's rowid): listings break created_at ties with it.
  std::map<std::string, std::int64_t, std::less<>> session_rowids;
  std::int64_t next_rowid = 1;
  std::map<std::string, core::message_record, std::less<>> messages;  // by id
  std::vector<fake_checkpoint_row> checkpoints;                       // sqlite_store's layout: snapshots and deltas
  std::map<std::string, std::vector<core::event_batch_record>, std::less<>> event_batches;  // segments by session, append order
  std::map<std::pair<std::string, std::string>, core::idempotency_record> idempotency;
  std::vector<core::queued_message_record> queued;  // arrival order
  std::int64_t queued_seq = 0;
  std::vector<core::webhook_delivery_record> deliveries;                           // with their attempts, insertion order
  std::map<std::tuple<std::string, std::string, std::string>, std::string> state;  // (scope, owner, key) -> JSON
  std::map<std::string, std::int64_t, std::less<>> event_webhook_cursors;          // by session id
  std::vector<core::webhook_delivery_record> notices;                              // deliveries that outlive their session
  std::map<std::string, std::int64_t, std::less<>> webhook_claims;                 // claimed_until by delivery (or notice) id
  // Run leases as PostgreSQL keeps them (core/storage/run_leases.hpp): one row per session,
  // run_id empty when free; the token only grows.
  std::map<std::string, core::run_lease_record, std::less<>> leases;
};

class fake_connection;

class fake_db {
 public:
  // --- fault injection ---
  void throw_on_job(int n) { throw_on_job_ = n; }
  void fail_commits(int k) { commits_to_fail_ = k; }
  void fail_commit_number(int n) { fail_commit_number_ = n; }
  void hold_commits() {
    std::lock_guard lock(mutex_);
    hold_ = true;
  }
  void release_commits() {
    {
      std::lock_guard lock(mutex_);
      hold_ = false;
    }
    cv_.notify_all();
  }
  // Another connection's commit between a read job's statements: `change` runs once on the
  // committed state right after the next oldest_event_id read (a retention trim, say),
  // under this db's mutex (it must not call back into the db). A batch open on another
  // connection meanwhile would overwrite the change at its commit: use it between batches.
  void once_after_oldest_event_id(std::function<void(fake_data&)> change) {
    std::lock_guard lock(mutex_);
    after_oldest_event_id_ = std::move(change);
  }
  std::atomic<int> op_delay_ms{0};
  std::atomic<int> read_delay_ms{0};
  std::atomic<int> commit_delay_ms{0};
  std::atomic<bool> fail_reads{false};
  // Refuse rows (messages, checkpoints, events, keys, deliveries) of an unknown session.
  std::atomic<bool> foreign_keys{false};

  // --- observation ---
  std::atomic<int> begins{0};
  std::atomic<int> commit_calls{0};
  std::atomic<int> commits{0};  // successful
  std::atomic<int> failed_commits{0};
  std::atomic<int> rollbacks{0};
  std::atomic<int> savepoints{0};
  std::atomic<int> releases{0};
  std::atomic<int> rollbacks_to_savepoint{0};
  std::atomic<int> connections_opened{0};
  std::atomic<int> commits_waiting{0};  // commit_batch() calls blocked by hold_commits()

  // "<connection>:<call>", e.g. "0:begin", "0:savepoint", "1:events_after".
  std::vector<std::string> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  // A copy of the committed state.
  fake_data committed() const {
    std::lock_guard lock(mutex_);
    return data_;
  }
  // Ids of the committed events of a session, in id order, each once.
  std::vector<std::int64_t> committed_event_ids(std::string_view session_id) const {
    std::lock_guard lock(mutex_);
    std::set<std::int64_t> ids;
    auto add = [&](const core::event_batch_record& b) {
      for (const auto& e : core::decode_log_frames(b.frames, b.first_id)) ids.insert(e->id);
    };
    if (auto it = data_.event_batches.find(session_id); it != data_.event_batches.end())
      for (const auto& b : it->second) add(b);
    return {ids.begin(), ids.end()};
  }
  bool event_committed(std::string_view session_id, std::int64_t id) const {
    std::lock_guard lock(mutex_);
    auto holds = [&](const core::event_batch_record& b) {
      return b.session_id == session_id && b.first_id <= id && id <= b.last_id;
    };
    if (auto it = data_.event_batches.find(session_id); it != data_.event_batches.end())
      for (const auto& b : it->second)
        if (holds(b)) return true;
    return false;
  }
  // Seeds committed state directly (test set-up).
  template <class F>
  void seed(F f) {
    std::lock_guard lock(mutex_);
    f(data_);
  }

  // A store_executor::connection_factory.
  std::unique_ptr<core::store_connection> connect();
  auto factory() {
    return [this](core::store_executor::connection_role) -> std::unique_ptr<core::store_connection> { return connect(); };
  }

 private:
  friend class fake_connection;
  void log(int connection, const char* call) {
    std::lock_guard lock(mutex_);
    calls_.push_back(std::to_string(connection) + ":" + call);
  }

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool hold_ = false;
  fake_data data_;
  std::vector<std::string> calls_;
  std::function<void(fake_data&)> after_oldest_event_id_;  // mutex_
  std::atomic<int> throw_on_job_{0};
  std::atomic<int> commits_to_fail_{0};
  std::atomic<int> fail_commit_number_{0};
};

class fake_connection final : public core::store_connection {
 public:
  fake_connection(fake_db& db, int index) : db_(db), index_(index) {}

  int index() const { return index_; }  // creation order: the executor opens its writer first
  bool in_batch() const { return working_ != nullptr; }
  bool batch_open() override { return in_batch(); }
  std::thread::id last_thread() const { return last_thread_; }

  // --- transactions ---
  void begin_batch() override {
    db_.log(index_, "begin");
    if (working_) throw core::store_error("fake: nested begin_batch");
    ++db_.begins;
    std::lock_guard lock(db_.mutex_);
    working_ = std::make_unique<fake_data>(db_.data_);
  }
  void commit_batch() override {
    db_.log(index_, "commit");
    if (!working_) throw core::store_error("fake: commit without begin");
    const int call = ++db_.commit_calls;
    if (int ms = db_.commit_delay_ms.load()) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    std::unique_lock lock(db_.mutex_);
    if (db_.hold_) {
      ++db_.commits_waiting;
      db_.cv_.wait(lock, [&] { return !db_.hold_; });
      --db_.commits_waiting;
    }
    if (int k = db_.commits_to_fail_.load(); k > 0 || call == db_.fail_commit_number_.load()) {
      if (k > 0) db_.commits_to_fail_ = k - 1;
      ++db_.failed_commits;
      // SQLite keeps the transaction open after a failed COMMIT; the executor rolls back.
      throw core::store_error("fake: injected commit failure");
    }
    db_.data_ = std::move(*working_);
    working_.reset();
    savepoints_.clear();
    ++db_.commits;
  }
  void rollback_batch() override {
    db_.log(index_, "rollback");
    ++db_.rollbacks;
    working_.reset();
    savepoints_.clear();
  }
  void savepoint() override {
    db_.log(index_, "savepoint");
    if (!working_) throw core::store_error("fake: savepoint outside a batch");
    const int job = ++db_.savepoints;
    fail_this_job_ = job == db_.throw_on_job_.load();
    savepoints_.push_back(*working_);
  }
  void release_savepoint() override {
    db_.log(index_, "release");
    if (savepoints_.empty()) throw core::store_error("fake: release without savepoint");
    ++db_.releases;
    savepoints_.pop_back();
    fail_this_job_ = false;
  }
  void rollback_to_savepoint() override {
    db_.log(index_, "rollback_to");
    if (savepoints_.empty()) throw core::store_error("fake: rollback_to without savepoint");
    ++db_.rollbacks_to_savepoint;
    *working_ = savepoints_.back();
  }

  // --- sessions ---
  void insert_session(const core::session_record& s) override {
    write("insert_session", [&](fake_data& d) {
      if (d.sessions.count(s.id)) throw core::store_error("fake: UNIQUE constraint failed: sessions.id");
      for (const auto& [id, other] : d.sessions)
        if (other.thread_id == s.thread_id) throw core::store_error("fake: UNIQUE constraint failed: sessions.thread_id");
      check_status(s.status);
      d.sessions[s.id] = s;
      d.sessions[s.id].active_at_ms = std::max(s.active_at_ms, s.created_at_ms);
      d.session_rowids[s.id] = d.next_rowid++;
    });
  }
  std::optional<core::session_record> find_session(std::string_view id) override {
    return read("find_session", [&](fake_data& d) -> std::optional<core::session_record> {
      auto it = d.sessions.find(id);
      if (it == d.sessions.end()) return std::nullopt;
      auto s = it->second;
      s.message_count = message_count(d, id);
      return s;
    });
  }
  core::session_page list_sessions(const core::session_filter& f) override {
    return read("list_sessions", [&](fake_data& d) {
      std::vector<core::session_record> all;  // newest first, the later inserted first at a tie
      for (const auto& [id, s] : d.sessions) {
        if (f.status && s.status != *f.status) continue;
        bool ok = true;
        for (const auto& [k, v] : f.metadata) ok = ok && s.metadata.count(k) && s.metadata.at(k) == v;
        for (const auto& [k, v] : f.scopes) ok = ok && s.scopes.count(k) && s.scopes.at(k) == v;
        for (const auto& l : f.labels) ok = ok && s.labels.count(l);
        if (ok) all.push_back(s);
      }
      std::sort(all.begin(), all.end(), [&](const auto& a, const auto& b) { return session_order(d, b, a); });
      core::session_page page;
      page.total = static_cast<std::int64_t>(all.size());
      for (std::int64_t i = f.offset; i < page.total && i < f.offset + f.limit; ++i) {
        page.sessions.push_back(all[static_cast<std::size_t>(i)]);
        page.sessions.back().message_count = message_count(d, page.sessions.back().id);
      }
      return page;
    });
  }
  bool update_session(const core::session_record& s) override {
    return write("update_session", [&](fake_data& d) {
      auto it = d.sessions.find(s.id);
      if (it == d.sessions.end()) return false;
      check_status(s.status);
      // Like SQLite: the identity, the creation time and the event sequence stay.
      auto updated = s;
      updated.thread_id = it->second.thread_id;
      updated.created_at_ms = it->second.created_at_ms;
      updated.last_event_id = it->second.last_event_id;
      updated.active_at_ms = std::max({it->second.active_at_ms, s.active_at_ms, s.updated_at_ms});
      it->second = std::move(updated);
      return true;
    });
  }
  bool delete_session(std::string_view id) override {
    return write("delete_session", [&](fake_data& d) {
      auto it = d.sessions.find(id);
      if (it == d.sessions.end()) return false;
      std::erase_if(d.messages, [&](const auto& kv) { return kv.second.session_id == id; });
      std::erase_if(d.checkpoints, [&](const auto& c) { return c.session_id == id; });
      std::erase_if(d.idempotency, [&](const auto& kv) { return kv.first.first == id; });
      std::erase_if(d.queued, [&](const auto& q) { return q.session_id == id; });
      if (auto e = d.event_batches.find(id); e != d.event_batches.end()) d.event_batches.erase(e);
      std::erase_if(d.deliveries, [&](const auto& r) { return r.session_id == id; });  // with their attempts
      if (auto c = d.event_webhook_cursors.find(id); c != d.event_webhook_cursors.end()) d.event_webhook_cursors.erase(c);
      std::erase_if(d.state, [&](const auto& kv) { return std::get<0>(kv.first) == "session" && std::get<1>(kv.first) == id; });
      d.session_rowids.erase(it->first);
      d.sessions.erase(it);
      return true;
    });
  }
  std::vector<core::session_record> idle_sessions(std::int64_t now_ms, std::int64_t default_ttl_ms, std::size_t limit) override {
    return read("idle_sessions", [&](fake_data& d) {
      std::vector<core::session_record> out;
      for (const auto& [id, s] : d.sessions) {
        const std::int64_t ttl_ms = s.ttl_seconds ? *s.ttl_seconds * 1000 : default_ttl_ms;
        if (ttl_ms > 0 && s.active_at_ms + ttl_ms <= now_ms) out.push_back(s);
      }
      std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.active_at_ms < b.active_at_ms; });
      if (out.size() > limit) out.resize(limit);
      return out;
    });
  }
  std::vector<core::event_webhook_cursor> event_webhook_cursors(std::string_view after_id, std::size_t limit) override {
    return read("event_webhook_cursors", [&](fake_data& d) {
      std::vector<core::event_webhook_cursor> out;
      for (const auto& [id, s] : d.sessions) {  // by id, as the map is ordered
        if (!s.event_webhook_url || id <= after_id) continue;
        if (out.size() >= limit) break;
        auto c = d.event_webhook_cursors.find(id);
        out.push_back({id, *s.event_webhook_url, c == d.event_webhook_cursors.end() ? 0 : c->second});
      }
      return out;
    });
  }
  std::optional<core::event_webhook_cursor> find_event_webhook_cursor(std::string_view session_id) override {
    return read("find_event_webhook_cursor", [&](fake_data& d) -> std::optional<core::event_webhook_cursor> {
      auto s = d.sessions.find(session_id);
      if (s == d.sessions.end() || !s->second.event_webhook_url) return std::nullopt;
      auto c = d.event_webhook_cursors.find(session_id);
      return core::event_webhook_cursor{s->first, *s->second.event_webhook_url,
                                        c == d.event_webhook_cursors.end() ? 0 : c->second};
    });
  }
  bool advance_event_webhook_cursor(std::string_view session_id, std::int64_t forwarded_id) override {
    return write("advance_event_webhook_cursor", [&](fake_data& d) {
      if (!d.sessions.count(session_id)) return false;
      auto& c = d.event_webhook_cursors[std::string(session_id)];
      c = std::max(c, forwarded_id);
      return true;
    });
  }
  std::map<std::string, std::string> read_state(std::string_view scope, std::string_view owner) override {
    return read("read_state", [&](fake_data& d) {
      std::map<std::string, std::string> out;
      for (const auto& [k, v] : d.state)
        if (std::get<0>(k) == scope && std::get<1>(k) == owner) out.emplace(std::get<2>(k), v);
      return out;
    });
  }
  void put_state(std::string_view scope, std::string_view owner, std::string_view key, std::string_view value,
                 std::int64_t) override {
    write("put_state", [&](fake_data& d) {
      d.state[{std::string(scope), std::string(owner), std::string(key)}] = std::string(value);
    });
  }
  void delete_state(std::string_view scope, std::string_view owner, std::string_view key) override {
    write("delete_state", [&](fake_data& d) { d.state.erase({std::string(scope), std::string(owner), std::string(key)}); });
  }
  std::vector<std::string> all_session_ids() override {
    return read("all_session_ids", [&](fake_data& d) {
      // Oldest first, ties in insertion order.
      std::vector<const core::session_record*> all;
      for (const auto& [id, s] : d.sessions) all.push_back(&s);
      std::sort(all.begin(), all.end(), [&](const auto* a, const auto* b) { return session_order(d, *a, *b); });
      std::vector<std::string> ids;
      for (const auto* s : all) ids.push_back(s->id);
      return ids;
    });
  }

  // --- messages ---
  core::message_page list_messages(std::string_view session_id, std::int64_t limit, std::int64_t offset) override {
    return read("list_messages", [&](fake_data& d) {
      auto all = messages_of(d, session_id);
      std::reverse(all.begin(), all.end());
      core::message_page page;
      page.total = static_cast<std::int64_t>(all.size());
      for (std::int64_t i = offset; i < page.total && i < offset + limit; ++i)
        page.messages.push_back(all[static_cast<std::size_t>(i)]);
      return page;
    });
  }
  std::vector<core::message_record> all_messages(std::string_view session_id) override {
    return read("all_messages", [&](fake_data& d) { return messages_of(d, session_id); });
  }
  void upsert_message(const core::message_record& m) override {
    write("upsert_message", [&](fake_data& d) {
      auto it = d.messages.find(m.id);
      // Like SQLite's ON CONFLICT (id) DO UPDATE: the row keeps its session.
      const std::string& session_id = it == d.messages.end() ? m.session_id : it->second.session_id;
      require_session(d, db_.foreign_keys.load(), session_id, "messages");
      for (const auto& [id, other] : d.messages)
        if (id != m.id && other.session_id == session_id && other.seq == m.seq)
          throw core::store_error("fake: UNIQUE constraint failed: messages.session_id, messages.seq");
      auto row = m;
      row.session_id = session_id;
      // Like migration 6's trigger: a new message is the session's latest activity.
      if (it == d.messages.end())
        if (auto s = d.sessions.find(session_id); s != d.sessions.end())
          s->second.active_at_ms = std::max(s->second.active_at_ms, m.created_at_ms);
      d.messages[m.id] = std::move(row);
    });
  }
  void delete_messages(std::string_view session_id) override {
    write("delete_messages",
          [&](fake_data& d) { std::erase_if(d.messages, [&](const auto& kv) { return kv.second.session_id == session_id; }); });
  }

  // --- checkpoints (tests/support/fake_checkpoints.hpp) ---
  void append_checkpoint(const core::checkpoint_delta& delta) override {
    write("append_checkpoint", [&](fake_data& d) {
      require_session(d, db_.foreign_keys.load(), delta.session_id, "checkpoints");
      fake_checkpoints::append(d.checkpoints, delta);
    });
  }
  std::optional<core::stored_conversation> latest_conversation(std::string_view thread_id) override {
    return read("latest_conversation", [&](fake_data& d) { return fake_checkpoints::latest(d.checkpoints, thread_id); });
  }
  std::optional<std::int64_t> latest_checkpoint_version(std::string_view thread_id) override {
    return read("latest_checkpoint_version", [&](fake_data& d) -> std::optional<std::int64_t> {
      auto t = fake_checkpoints::tip(d.checkpoints, thread_id);
      if (!t) return std::nullopt;
      return t->version;
    });
  }
  core::checkpoint_footprint checkpoint_footprint_of(std::string_view thread_id) override {
    return read("checkpoint_footprint_of", [&](fake_data& d) { return fake_checkpoints::footprint(d.checkpoints, thread_id); });
  }
  void insert_checkpoint(const core::checkpoint_record& c) override {
    write("insert_checkpoint", [&](fake_data& d) {
      require_session(d, db_.foreign_keys.load(), c.session_id, "checkpoints");
      auto row = core::snapshot_row(c.state);
      fake_checkpoints::insert(d.checkpoints, {c.thread_id, c.session_id, c.version, true, -1, std::move(row.text), 0,
                                               row.snapshot_bytes, c.created_at_ms});
    });
  }
  std::optional<core::checkpoint_record> latest_checkpoint(std::string_view thread_id) override {
    return read("latest_checkpoint", [&](fake_data& d) { return fake_checkpoints::latest_text(d.checkpoints, thread_id); });
  }

  // --- run leases ---
  std::optional<core::run_lease_record> acquire_run_lease(std::string_view session_id, std::string_view run_id,
                                                          std::string_view node_id, std::int64_t now_ms,
                                                          std::int64_t expires_at_ms) override {
    return write("acquire_run_lease", [&](fake_data& d) -> std::optional<core::run_lease_record> {
      auto& l = d.leases[std::string(session_id)];
      const bool free = l.run_id.empty() || l.expires_at_ms <= now_ms || l.node_id == node_id;
      if (!free) return std::nullopt;
      l = {std::string(session_id), std::string(run_id), std::string(node_id), l.token + 1, expires_at_ms, false};
      return l;
    });
  }
  core::lease_renewal renew_run_lease(std::string_view session_id, std::int64_t token, std::int64_t expires_at_ms) override {
    return write("renew_run_lease", [&](fake_data& d) -> core::lease_renewal {
      auto it = d.leases.find(session_id);
      if (it == d.leases.end() || it->second.token != token || it->second.run_id.empty()) return {};
      it->second.expires_at_ms = expires_at_ms;
      return {true, it->second.abort_requested};
    });
  }
  bool release_run_lease(std::string_view session_id, std::int64_t token) override {
    return write("release_run_lease", [&](fake_data& d) {
      auto it = d.leases.find(session_id);
      if (it == d.leases.end() || it->second.token != token || it->second.run_id.empty()) return false;
      it->second.run_id.clear();
      it->second.node_id.clear();
      return true;
    });
  }
  std::optional<core::run_lease_record> find_run_lease(std::string_view session_id) override {
    return read("find_run_lease", [&](fake_data& d) -> std::optional<core::run_lease_record> {
      auto it = d.leases.find(session_id);
      if (it == d.leases.end() || it->second.run_id.empty()) return std::nullopt;
      return it->second;
    });
  }
  std::vector<core::run_lease_record> lapsed_run_leases(std::int64_t now_ms, std::size_t limit) override {
    return read("lapsed_run_leases", [&](fake_data& d) {
      std::vector<core::run_lease_record> out;
      for (const auto& [id, l] : d.leases)
        if (!l.run_id.empty() && l.expires_at_ms <= now_ms && out.size() < limit) out.push_back(l);
      return out;
    });
  }
  bool request_run_abort(std::string_view session_id, std::string_view run_id) override {
    return write("request_run_abort", [&](fake_data& d) {
      auto it = d.leases.find(session_id);
      if (it == d.leases.end() || it->second.run_id != run_id) return false;
      it->second.abort_requested = true;
      return true;
    });
  }

  // --- event log ---
  static void advance_last_event_id(fake_data& d, const core::event_batch_record& batch) {
    if (auto it = d.sessions.find(batch.session_id); it != d.sessions.end())
      it->second.last_event_id = std::max(it->second.last_event_id, batch.last_id);
  }
  void append_events(const core::event_batch_record& batch) override {
    write("append_events", [&](fake_data& d) {
      require_session(d, db_.foreign_keys.load(), batch.session_id, "event_batches");
      // Like SQLite: a row with this first id is an earlier attempt of the same events.
      auto& rows = d.event_batches[batch.session_id];
      auto same = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.first_id == batch.first_id; });
      if (same == rows.end())
        rows.push_back(batch);
      else if (batch.last_id > same->last_id)
        *same = batch;
      advance_last_event_id(d, batch);
    });
  }
  std::vector<core::frame_ptr> events_after(std::string_view session_id, std::int64_t after_id, std::size_t limit) override {
    return read("events_after", [&](fake_data& d) {
      std::vector<core::frame_ptr> out;
      auto it = d.event_batches.find(session_id);
      if (it == d.event_batches.end()) return out;
      auto batches = it->second;
      std::sort(batches.begin(), batches.end(), [](const auto& a, const auto& b) { return a.first_id < b.first_id; });
      for (const auto& b : batches) {
        if (b.last_id <= after_id) continue;
        for (auto& e : core::decode_log_frames(b.frames, b.first_id)) {
          if (out.size() >= limit) return out;
          if (e->id > after_id) out.push_back(std::move(e));
        }
      }
      return out;
    });
  }
  std::int64_t oldest_event_id(std::string_view session_id) override {
    return read("oldest_event_id", [&](fake_data& d) -> std::int64_t {
      auto it = d.event_batches.find(session_id);
      if (it == d.event_batches.end() || it->second.empty()) return 0;
      std::int64_t oldest = it->second.front().first_id;
      for (const auto& b : it->second) oldest = std::min(oldest, b.first_id);
      if (!working_ && db_.after_oldest_event_id_) std::exchange(db_.after_oldest_event_id_, nullptr)(d);
      return oldest;
    });
  }
  void trim_events(std::string_view session_id, std::int64_t keep_from_id) override {
    write("trim_events", [&](fake_data& d) {
      if (auto it = d.event_batches.find(session_id); it != d.event_batches.end()) {
        std::erase_if(it->second, [&](const auto& b) { return b.last_id < keep_from_id; });
        // Like SQLite: the row the cut goes through keeps its frames from the cut on.
        for (auto& b : it->second)
          if (b.first_id < keep_from_id) {
            b.frames = core::encode_log_suffix(b.frames, b.first_id, keep_from_id);
            b.first_id = keep_from_id;
          }
      }
    });
  }

  // --- idempotency keys ---
  std::optional<core::idempotency_record> find_idempotency_key(std::string_view session_id, std::string_view key) override {
    return read("find_idempotency_key", [&](fake_data& d) -> std::optional<core::idempotency_record> {
      auto it = d.idempotency.find({std::string(session_id), std::string(key)});
      if (it == d.idempotency.end()) return std::nullopt;
      return it->second;
    });
  }
  void insert_idempotency_key(const core::idempotency_record& r) override {
    write("insert_idempotency_key", [&](fake_data& d) {
      require_session(d, db_.foreign_keys.load(), r.session_id, "idempotency_keys");
      if (!d.idempotency.emplace(std::pair{r.session_id, r.key}, r).second)
        throw core::store_error("fake: UNIQUE constraint failed: idempotency_keys");
    });
  }
  // --- message queue ---
  std::int64_t enqueue_message(const core::queued_message_record& m) override {
    return write("enqueue_message", [&](fake_data& d) {
      require_session(d, db_.foreign_keys.load(), m.session_id, "queued_messages");
      for (const auto& q : d.queued)
        if (q.id == m.id) throw core::store_error("fake: UNIQUE constraint failed: queued_messages.id");
      d.queued.push_back(m);
      d.queued.back().seq = ++d.queued_seq;
      return d.queued_seq;
    });
  }
  std::vector<core::queued_message_record> take_queued_messages(std::string_view session_id) override {
    return write("take_queued_messages", [&](fake_data& d) {
      std::vector<core::queued_message_record> out;
      for (const auto& q : d.queued)
        if (q.session_id == session_id) out.push_back(q);
      std::erase_if(d.queued, [&](const auto& q) { return q.session_id == session_id; });
      return out;
    });
  }
  std::int64_t queued_message_count(std::string_view session_id) override {
    return read("queued_message_count", [&](fake_data& d) {
      return static_cast<std::int64_t>(
          std::count_if(d.queued.begin(), d.queued.end(), [&](const auto& q) { return q.session_id == session_id; }));
    });
  }
  void purge_idempotency_keys(std::int64_t older_than_ms) override {
    write("purge_idempotency_keys", [&](fake_data& d) {
      std::erase_if(d.idempotency, [&](const auto& kv) { return kv.second.created_at_ms < older_than_ms; });
    });
  }

  // --- webhook outbox ---
  void insert_session_notice(const core::webhook_delivery_record& r) override {
    write("insert_session_notice", [&](fake_data& d) {
      for (const auto& other : d.notices)
        if (other.id == r.id || other.webhook_id == r.webhook_id)
          throw core::store_error("fake: UNIQUE constraint failed: session_notices");
      check_delivery_status(r.status);
      d.notices.push_back(r);
      d.notices.back().attempts.clear();
    });
  }
  void insert_webhook_delivery(const core::webhook_delivery_record& r) override {
    write("insert_webhook_delivery", [&](fake_data& d) {
      require_session(d, db_.foreign_keys.load(), r.session_id, "webhook_deliveries");
      for (const auto& other : d.deliveries) {
        if (other.id == r.id) throw core::store_error("fake: UNIQUE constraint failed: webhook_deliveries.id");
        if (other.webhook_id == r.webhook_id)
          throw core::store_error("fake: UNIQUE constraint failed: webhook_deliveries.webhook_id");
      }
      check_delivery_status(r.status);
      auto row = r;
      row.attempts.clear();  // attempts are only ever recorded
      d.deliveries.push_back(std::move(row));
    });
  }
  std::vector<core::webhook_delivery_record> list_webhook_deliveries(std::string_view session_id) override {
    return read("list_webhook_deliveries", [&](fake_data& d) {
      std::vector<core::webhook_delivery_record> out;  // oldest first, ties in insertion order
      for (const auto& r : d.deliveries)
        if (r.session_id == session_id) out.push_back(r);
      std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.created_at_ms < b.created_at_ms; });
      return out;
    });
  }
  std::optional<core::webhook_delivery_record> find_webhook_delivery(std::string_view session_id,
                                                                     std::string_view delivery_id) override {
    return read("find_webhook_delivery", [&](fake_data& d) -> std::optional<core::webhook_delivery_record> {
      for (const auto& r : d.deliveries)
        if (r.session_id == session_id && r.id == delivery_id) return without_attempts(r);
      return std::nullopt;
    });
  }
  std::vector<core::webhook_delivery_record> claim_due_webhook_deliveries(std::int64_t now_ms, std::int64_t claim_until_ms,
                                                                          std::size_t limit) override {
    return write("claim_due_webhook_deliveries", [&](fake_data& d) {
      // Like the stores: a live claim (claimed_until > now) keeps a delivery from being handed out.
      auto free = [&](const core::webhook_delivery_record& r) {
        auto c = d.webhook_claims.find(r.id);
        return c == d.webhook_claims.end() || c->second <= now_ms;
      };
      std::vector<core::webhook_delivery_record> out;  // earliest due first, ties in insertion order
      for (const auto& r : d.deliveries)
        if (r.status == "pending" && r.next_attempt_at_ms && *r.next_attempt_at_ms <= now_ms && free(r)) {
          // Like sqlite_store: an event batch waits for the session's earlier pending batches.
          bool waits = false;
          for (const auto& e : d.deliveries)
            waits = waits || (r.event_first_id && e.session_id == r.session_id && e.status == "pending" && e.event_first_id &&
                              *e.event_first_id < *r.event_first_id);
          if (!waits) out.push_back(without_attempts(r));
        }
      for (const auto& r : d.notices)
        if (r.status == "pending" && r.next_attempt_at_ms && *r.next_attempt_at_ms <= now_ms && free(r)) out.push_back(r);
      std::stable_sort(out.begin(), out.end(),
                       [](const auto& a, const auto& b) { return *a.next_attempt_at_ms < *b.next_attempt_at_ms; });
      if (out.size() > limit) out.resize(limit);
      for (const auto& r : out) d.webhook_claims[r.id] = claim_until_ms;
      return out;
    });
  }
  std::optional<std::int64_t> next_webhook_due_ms(std::int64_t after_ms) override {
    return read("next_webhook_due_ms", [&](fake_data& d) -> std::optional<std::int64_t> {
      std::optional<std::int64_t> next;
      for (const auto* rows : {&d.deliveries, &d.notices})
        for (const auto& r : *rows) {
          if (r.status != "pending" || !r.next_attempt_at_ms) continue;
          // Due at its schedule, or when a claim on it ends.
          auto due = *r.next_attempt_at_ms;
          if (auto c = d.webhook_claims.find(r.id); c != d.webhook_claims.end()) due = std::max(due, c->second);
          if (due > after_ms && (!next || due < *next)) next = due;
        }
      return next;
    });
  }
  void release_webhook_claims() override {
    write("release_webhook_claims", [&](fake_data& d) { d.webhook_claims.clear(); });
  }
  bool try_lead(std::string_view) override {
    return read("try_lead", [](fake_data&) { return true; });  // one process: always the leader
  }
  bool record_webhook_attempt(const core::webhook_attempt_outcome& o) override {
    return write("record_webhook_attempt", [&](fake_data& d) {
      for (auto& r : d.deliveries) {
        if (r.id != o.delivery_id || r.status != "pending") continue;
        check_delivery_status(o.status);
        r.status = o.status;
        r.next_attempt_at_ms = o.next_attempt_at_ms;
        ++r.round_attempts;
        auto attempt = o.attempt;
        attempt.attempt = static_cast<std::int64_t>(r.attempts.size()) + 1;
        r.attempts.push_back(attempt);
        d.webhook_claims.erase(r.id);
        return true;
      }
      for (auto& r : d.notices) {  // like sqlite_store: state moves on, attempts are not kept
        if (r.id != o.delivery_id || r.status != "pending") continue;
        check_delivery_status(o.status);
        r.status = o.status;
        r.next_attempt_at_ms = o.next_attempt_at_ms;
        ++r.round_attempts;
        d.webhook_claims.erase(r.id);
        return true;
      }
      return false;
    });
  }
  bool requeue_webhook_delivery(std::string_view delivery_id, std::int64_t now_ms) override {
    return write("requeue_webhook_delivery", [&](fake_data& d) {
      for (auto& r : d.deliveries) {
        if (r.id != delivery_id) continue;
        r.status = "pending";  // like SQLite: whatever its status (a redelivery on request)
        r.round_attempts = 0;
        r.next_attempt_at_ms = now_ms;
        d.webhook_claims.erase(r.id);
        return true;
      }
      return false;
    });
  }

 private:
  // SQLite's constraints, as the fake enforces them (before changing anything, so a
  // refused write leaves no trace even outside a batch).
  static void require_session(const fake_data& d, bool foreign_keys, std::string_view session_id, const char* table) {
    if (foreign_keys && !d.sessions.count(session_id))
      throw core::store_error(std::string("fake: FOREIGN KEY constraint failed (") + table + ".session_id)");
  }
  static void check_status(std::string_view status) {
    if (status != "active" && status != "inactive" && status != "error")
      throw core::store_error("fake: CHECK constraint failed: sessions.status");
  }
  static void check_delivery_status(std::string_view status) {
    if (status != "pending" && status != "delivered" && status != "failed")
      throw core::store_error("fake: CHECK constraint failed: webhook_deliveries.status");
  }
  // Oldest first, then in insertion order (SQLite: ORDER BY created_at, rowid).
  static bool session_order(const fake_data& d, const core::session_record& a, const core::session_record& b) {
    if (a.created_at_ms != b.created_at_ms) return a.created_at_ms < b.created_at_ms;
    // Sessions put in by seed() have no rowid: they sort before inserted ones, by id.
    auto rowid = [&](const core::session_record& s) {
      auto it = d.session_rowids.find(s.id);
      return it == d.session_rowids.end() ? std::int64_t{0} : it->second;
    };
    if (rowid(a) != rowid(b)) return rowid(a) < rowid(b);
    return a.id < b.id;
  }
  static std::int64_t message_count(const fake_data& d, std::string_view session_id) {
    std::int64_t n = 0;
    for (const auto& [id, m] : d.messages)
      if (m.session_id == session_id) ++n;
    return n;
  }
  static core::webhook_delivery_record without_attempts(core::webhook_delivery_record r) {
    r.attempts.clear();
    return r;
  }
  static std::vector<core::message_record> messages_of(const fake_data& d, std::string_view session_id) {
    std::vector<core::message_record> out;
    for (const auto& [id, m] : d.messages)
      if (m.session_id == session_id) out.push_back(m);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.seq < b.seq; });
    return out;
  }

  // Common prologue of every data operation: log, delay, injected failures.
  void enter(const char* call) {
    db_.log(index_, call);
    last_thread_ = std::this_thread::get_id();
    if (int ms = db_.op_delay_ms.load()) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    if (!working_) {
      if (int ms = db_.read_delay_ms.load()) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      if (db_.fail_reads.load()) throw core::store_error(std::string("fake: injected read failure in ") + call);
    }
    if (fail_this_job_) throw core::store_error(std::string("fake: injected job failure in ") + call);
  }
  template <class F>
  std::invoke_result_t<F&, fake_data&> read(const char* call, F f) {
    enter(call);
    if (working_) return f(*working_);
    std::lock_guard lock(db_.mutex_);
    return f(db_.data_);
  }
  template <class F>
  std::invoke_result_t<F&, fake_data&> write(const char* call, F f) {
    return read(call, std::move(f));  // autocommit outside a batch: applied to the committed state at once
  }

  fake_db& db_;
  int index_;
  std::unique_ptr<fake_data> working_;  // set between begin_batch and commit/rollback
  std::vector<fake_data> savepoints_;
  bool fail_this_job_ = false;
  std::thread::id last_thread_;
};

inline std::unique_ptr<core::store_connection> fake_db::connect() {
  return std::make_unique<fake_connection>(*this, connections_opened++);
}

}  // namespace agw::test
