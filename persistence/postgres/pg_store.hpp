#pragma once
// Every storage port (core/storage/) over one PostgreSQL connection. The
// store_executor gives each connection to exactly one of its threads; nothing
// here is thread-safe. Transactions: a batch is BEGIN..COMMIT, a job a SAVEPOINT
// inside it (store_connection.hpp); outside a batch each statement autocommits.
//
// Split by port: sessions, messages, events and keys here, checkpoints in
// pg_store_checkpoints.cpp, the webhook outbox in pg_store_webhooks.cpp, the state
// scopes and the message queue in pg_store_state.cpp.
#include <map>
#include <string>

#include "core/storage/store_connection.hpp"
#include "persistence/postgres/pg_connection.hpp"

namespace agw::persistence::pg {

class pg_store final : public core::store_connection {
 public:
  // Connects; the schema must be migrated (pg_migrations.hpp) by whoever starts first.
  // `node_id` names this node's webhook claims (claimed_by), so that its start-up repair
  // releases its own claims only: other nodes' attempts are under way.
  explicit pg_store(const std::string& url, std::string node_id = "") : db_(url), node_id_(std::move(node_id)) {}

  void begin_batch() override;
  void commit_batch() override;
  void rollback_batch() override;
  void savepoint() override;
  void release_savepoint() override;
  void rollback_to_savepoint() override;
  bool batch_open() override;

  // One snapshot for a read of several statements (rows, then their children; a count,
  // then its page): a REPEATABLE READ READ ONLY transaction of its own while it lives,
  // when none is open. Under READ COMMITTED each statement sees the newest commit (any
  // node's), and a listing could mix two. Inside a batch (a write job) it opens nothing:
  // a transaction's isolation is set at its start. Ended by COMMIT (ROLLBACK if that
  // fails), so the connection is never left in a transaction.
  class read_snapshot {
   public:
    explicit read_snapshot(pg_store& store);
    ~read_snapshot();
    read_snapshot(const read_snapshot&) = delete;
    read_snapshot& operator=(const read_snapshot&) = delete;

   private:
    connection& db_;
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

  // State scopes (pg_store_state.cpp).
  std::map<std::string, std::string> read_state(std::string_view scope, std::string_view owner) override;
  void put_state(std::string_view scope, std::string_view owner, std::string_view key, std::string_view value,
                 std::int64_t at_ms) override;
  void delete_state(std::string_view scope, std::string_view owner, std::string_view key) override;

  core::message_page list_messages(std::string_view session_id, std::int64_t limit, std::int64_t offset) override;
  std::vector<core::message_record> all_messages(std::string_view session_id) override;
  void upsert_message(const core::message_record& m) override;
  void delete_messages(std::string_view session_id) override;

  void append_checkpoint(const core::checkpoint_delta& d) override;
  std::optional<core::stored_conversation> latest_conversation(std::string_view thread_id) override;
  std::optional<std::int64_t> latest_checkpoint_version(std::string_view thread_id) override;
  core::checkpoint_footprint checkpoint_footprint_of(std::string_view thread_id) override;
  void insert_checkpoint(const core::checkpoint_record& c) override;
  std::optional<core::checkpoint_record> latest_checkpoint(std::string_view thread_id) override;

  void append_events(const core::event_batch_record& batch) override;
  std::vector<core::frame_ptr> events_after(std::string_view session_id, std::int64_t after_id, std::size_t limit) override;
  std::int64_t oldest_event_id(std::string_view session_id) override;
  void trim_events(std::string_view session_id, std::int64_t keep_from_id) override;

  std::optional<core::idempotency_record> find_idempotency_key(std::string_view session_id, std::string_view key) override;
  void insert_idempotency_key(const core::idempotency_record& r) override;
  void purge_idempotency_keys(std::int64_t older_than_ms) override;

  // message_queue (migration 3; pg_store_state.cpp)
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

  // run_leases (migrations 2 and 5; pg_run_leases.cpp): PostgreSQL decides between nodes.
  std::optional<core::run_lease_record> acquire_run_lease(std::string_view session_id, std::string_view run_id,
                                                          std::string_view node_id, std::int64_t now_ms,
                                                          std::int64_t expires_at_ms) override;
  core::lease_renewal renew_run_lease(std::string_view session_id, std::int64_t token, std::int64_t expires_at_ms) override;
  bool release_run_lease(std::string_view session_id, std::int64_t token) override;
  std::optional<core::run_lease_record> find_run_lease(std::string_view session_id) override;
  std::vector<core::run_lease_record> lapsed_run_leases(std::int64_t now_ms, std::size_t limit) override;
  bool request_run_abort(std::string_view session_id, std::string_view run_id) override;

  // Many sessions' event rows in one statement (the event writer's batch): one round
  // trip however many sessions a writer cycle carries. All or nothing.
  void append_event_rows(const std::vector<core::event_batch_record>& rows);

  connection& db() { return db_; }

 private:
  void write_labels(const core::session_record& s, bool fresh);
  void insert_checkpoint_row(std::string_view thread_id, std::string_view session_id, std::int64_t version, bool snapshot,
                             std::int64_t message_count, std::int64_t delta_bytes, std::int64_t snapshot_bytes,
                             const std::string& text, std::int64_t created_at_ms);
  connection db_;
  std::string node_id_;  // claimed_by of this node's webhook claims
};

}  // namespace agw::persistence::pg
