#pragma once
// Every storage port (core/storage/) over one SQLite connection, plus what only
// SQLite's event log layout needs (the start-up fold of the event journal). Not
// thread-safe: the store_executor gives each connection to exactly one thread.
// A session's events live in segments (event_batches rows); those only the journal
// holds are in `tails` (journal_tails.hpp), which reads merge in.
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "core/checkpoint_chain.hpp"
#include "core/storage/store_connection.hpp"
#include "persistence/journal_tails.hpp"
#include "persistence/sqlite_database.hpp"

namespace agw::persistence {

class sqlite_store final : public core::store_connection {
 public:
  // Opens the file; the first connection of a process should call migrate() on it.
  explicit sqlite_store(const std::string& path, const sqlite_database::options& opts = {}, const journal_tails* tails = nullptr);

  void begin_batch() override;
  void commit_batch() override;
  void rollback_batch() override;
  void savepoint() override;
  void release_savepoint() override;
  void rollback_to_savepoint() override;
  bool batch_open() override { return !sqlite3_get_autocommit(db_.handle()); }

  // One snapshot for a read of several statements (rows, then their children; a count,
  // then its page): a read transaction of its own while it lives, when none is open. In
  // autocommit each statement would see the newest commit, and a listing could mix two.
  // Not for reads that merge the journal's in-memory tails (events_after,
  // oldest_event_id): they read the tail before the database, which a snapshot taken
  // earlier would undo.
  class read_snapshot {
   public:
    explicit read_snapshot(sqlite_store& store);
    ~read_snapshot();
    read_snapshot(const read_snapshot&) = delete;
    read_snapshot& operator=(const read_snapshot&) = delete;

   private:
    sqlite_database& db_;
    bool own_;  // opened here (not inside a batch)
  };

  void insert_session(const core::session_record& s) override;
  std::optional<core::session_record> find_session(std::string_view id) override;
  core::session_page list_sessions(const core::session_filter& filter) override;
  bool update_session(const core::session_record& s) override;
  bool delete_session(std::string_view id) override;
  std::vector<std::string> all_session_ids() override;
  std::vector<core::session_record> idle_sessions(std::int64_t now_ms, std::int64_t default_ttl_ms, std::size_t limit) override;
  std::vector<core::event_webhook_cursor> event_webhook_cursors(std::string_view after_id, std::size_t limit) override;
  std::optional<core::event_webhook_cursor> find_event_webhook_cursor(std::string_view session_id) override;
  bool advance_event_webhook_cursor(std::string_view session_id, std::int64_t forwarded_id) override;

  // State scopes (sqlite_store_state.cpp).
  std::map<std::string, std::string> read_state(std::string_view scope, std::string_view owner) override;
  void put_state(std::string_view scope, std::string_view owner, std::string_view key, std::string_view value,
                 std::int64_t at_ms) override;
  void delete_state(std::string_view scope, std::string_view owner, std::string_view key) override;

  core::message_page list_messages(std::string_view session_id, std::int64_t limit, std::int64_t offset) override;
  std::vector<core::message_record> all_messages(std::string_view session_id) override;
  void upsert_message(const core::message_record& m) override;
  void delete_messages(std::string_view session_id) override;

  // Checkpoints (sqlite_store_checkpoints.cpp): rows laid out as core/checkpoint_chain.hpp says.
  void append_checkpoint(const core::checkpoint_delta& d) override;
  std::optional<core::stored_conversation> latest_conversation(std::string_view thread_id) override;
  std::optional<std::int64_t> latest_checkpoint_version(std::string_view thread_id) override;
  core::checkpoint_footprint checkpoint_footprint_of(std::string_view thread_id) override;
  void insert_checkpoint(const core::checkpoint_record& c) override;
  std::optional<core::checkpoint_record> latest_checkpoint(std::string_view thread_id) override;

  void append_events(const core::event_batch_record& segment) override;  // one segment row
  std::vector<core::frame_ptr> events_after(std::string_view session_id, std::int64_t after_id, std::size_t limit) override;
  std::int64_t oldest_event_id(std::string_view session_id) override;
  void trim_events(std::string_view session_id, std::int64_t keep_from_id) override;

  std::optional<core::idempotency_record> find_idempotency_key(std::string_view session_id, std::string_view key) override;
  void insert_idempotency_key(const core::idempotency_record& r) override;
  void purge_idempotency_keys(std::int64_t older_than_ms) override;

  // message_queue (migration 5)
  std::int64_t enqueue_message(const core::queued_message_record& m) override;
  std::vector<core::queued_message_record> take_queued_messages(std::string_view session_id) override;
  std::int64_t queued_message_count(std::string_view session_id) override;

  void insert_webhook_delivery(const core::webhook_delivery_record& d) override;
  void insert_session_notice(const core::webhook_delivery_record& d) override;
  std::vector<core::webhook_delivery_record> list_webhook_deliveries(std::string_view session_id) override;
  std::optional<core::webhook_delivery_record> find_webhook_delivery(std::string_view session_id,
                                                                     std::string_view delivery_id) override;
  std::vector<core::webhook_delivery_record> claim_due_webhook_deliveries(std::int64_t now_ms, std::int64_t claim_until_ms,
                                                                          std::size_t limit) override;
  std::optional<std::int64_t> next_webhook_due_ms(std::int64_t after_ms) override;
  bool record_webhook_attempt(const core::webhook_attempt_outcome& outcome) override;
  bool requeue_webhook_delivery(std::string_view delivery_id, std::int64_t now_ms) override;
  void release_webhook_claims() override;

  bool try_lead(std::string_view task) override;

  // Run leases: one process owns every run (its channels' reservations decide): every
  // lease is granted, none recorded (core/storage/run_leases.hpp).
  std::optional<core::run_lease_record> acquire_run_lease(std::string_view session_id, std::string_view run_id,
                                                          std::string_view node_id, std::int64_t now_ms,
                                                          std::int64_t expires_at_ms) override {
    return local_leases_.acquire_run_lease(session_id, run_id, node_id, now_ms, expires_at_ms);
  }
  core::lease_renewal renew_run_lease(std::string_view session_id, std::int64_t token, std::int64_t expires_at_ms) override {
    return local_leases_.renew_run_lease(session_id, token, expires_at_ms);
  }
  bool release_run_lease(std::string_view session_id, std::int64_t token) override {
    return local_leases_.release_run_lease(session_id, token);
  }
  std::optional<core::run_lease_record> find_run_lease(std::string_view session_id) override {
    return local_leases_.find_run_lease(session_id);
  }
  std::vector<core::run_lease_record> lapsed_run_leases(std::int64_t now_ms, std::size_t limit) override {
    return local_leases_.lapsed_run_leases(now_ms, limit);
  }
  bool request_run_abort(std::string_view session_id, std::string_view run_id) override {
    return local_leases_.request_run_abort(session_id, run_id);
  }

  // Whether the session `id` exists and is the incarnation `thread_id` (its events'
  // writer checks before a segment: a session made again with the id is another).
  bool session_has_thread(std::string_view id, std::string_view thread_id);
  // Start-up: moves what only the event journal holds (its files in `journal_dir`, and
  // the rows of the event_journal table that versions before the journal files wrote)
  // into segments, and empties the table. The files are left for the caller to remove
  // once this has committed. Returns the number of journal records folded.
  std::size_t fold_journal(const std::filesystem::path& journal_dir);

  sqlite_database& database() { return db_; }

 private:
  core::local_run_leases local_leases_;
  void write_labels(const core::session_record& s);
  void insert_checkpoint_row(std::string_view thread_id, std::string_view session_id, std::int64_t version,
                             const core::checkpoint_row& row, std::int64_t created_at_ms);
  std::vector<core::frame_ptr> segment_events_after(std::string_view session_id, std::int64_t after_id, std::size_t limit);
  sqlite_database db_;
  const journal_tails* tails_;  // none: a connection of a process that writes no events (tools, tests)
};

}  // namespace agw::persistence
