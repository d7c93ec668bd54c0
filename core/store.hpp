#pragma once
// The storage interface core/ defines and persistence/ implements.
//
// A store_connection is one database connection: NOT thread-safe. The
// store_executor owns every connection and calls it only from its own threads,
// so no io thread ever touches storage. Methods throw store_error on failure.
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/events/event_frame.hpp"
#include "core/session.hpp"
#include "core/session_request.hpp"
#include "core/store_records.hpp"

namespace agw::core {

// Storage failed (disk, I/O, corruption, busy past the timeout): the API answers 503.
class store_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class store_connection {
 public:
  virtual ~store_connection() = default;

  // Transactions. The executor wraps each write job in a savepoint inside one
  // batch transaction, so many jobs share one commit (group commit).
  virtual void begin_batch() = 0;
  virtual void commit_batch() = 0;
  virtual void rollback_batch() = 0;
  virtual void savepoint() = 0;
  virtual void release_savepoint() = 0;
  virtual void rollback_to_savepoint() = 0;
  // Whether a batch transaction is open (SQLite ends one by itself on some errors).
  virtual bool batch_open() = 0;

  // Sessions.
  virtual void insert_session(const session_record& s) = 0;
  virtual std::optional<session_record> find_session(std::string_view id) = 0;
  virtual session_page list_sessions(const session_filter& filter) = 0;
  virtual bool update_session(const session_record& s) = 0;  // false: no such session
  virtual bool delete_session(std::string_view id) = 0;      // cascades to everything it owns
  virtual std::vector<std::string> all_session_ids() = 0;

  // Messages projection.
  virtual message_page list_messages(std::string_view session_id, std::int64_t limit, std::int64_t offset) = 0;
  virtual std::vector<message_record> all_messages(std::string_view session_id) = 0;  // oldest first
  virtual void upsert_message(const message_record& m) = 0;
  virtual void delete_messages(std::string_view session_id) = 0;

  // Checkpoints (authoritative per thread).
  virtual void insert_checkpoint(const checkpoint_record& c) = 0;
  virtual std::optional<checkpoint_record> latest_checkpoint(std::string_view thread_id) = 0;

  // Event log (docs/streaming.md, "The event log"). A session's events live in
  // segments: rows of consecutive serialized frames, clustered by session. Small
  // batches go first to the journal, one table in commit order shared by every
  // session, and reach a segment later; the journal is read only by the start-up fold.
  virtual void append_segment(const event_batch_record& segment) = 0;
  // One journal row holding these batches (of any sessions); returns its seq.
  virtual std::int64_t append_journal(std::span<const event_batch_record* const> batches) = 0;
  std::int64_t append_journal(const event_batch_record& batch) {
    const event_batch_record* one[] = {&batch};
    return append_journal(one);
  }
  // Removes the oldest journal rows below `keep_from_seq` (below any seq when none is
  // given), at most truncate_batch of them per call: a cut is a bounded piece of work.
  static constexpr std::size_t truncate_batch = 4096;
  virtual void truncate_journal(std::optional<std::int64_t> keep_from_seq) = 0;
  // Start-up: moves what only the journal holds into segments, then empties it.
  // Returns the number of journal rows that were folded.
  virtual std::size_t fold_journal() = 0;
  // Segments only: the caller adds what it holds in memory of the journal.
  virtual std::vector<frame_ptr> events_after(std::string_view session_id, std::int64_t after_id, std::size_t limit) = 0;
  virtual std::int64_t oldest_event_id(std::string_view session_id) = 0;  // 0: none held
  virtual void trim_events(std::string_view session_id, std::int64_t keep_from_id) = 0;

  // Idempotency keys of POST /messages.
  virtual std::optional<idempotency_record> find_idempotency_key(std::string_view session_id, std::string_view key) = 0;
  virtual void insert_idempotency_key(const idempotency_record& r) = 0;
  virtual void purge_idempotency_keys(std::int64_t older_than_ms) = 0;

  // Webhook outbox.
  virtual void insert_webhook_delivery(const webhook_delivery_record& d) = 0;
  virtual std::vector<webhook_delivery_record> list_webhook_deliveries(std::string_view session_id) = 0;  // with attempts, oldest first
  virtual std::optional<webhook_delivery_record> find_webhook_delivery(std::string_view session_id, std::string_view delivery_id) = 0;
  // Pending deliveries due at `now_ms`, earliest first (without attempts).
  virtual std::vector<webhook_delivery_record> due_webhook_deliveries(std::int64_t now_ms, std::size_t limit) = 0;
  virtual std::optional<std::int64_t> next_webhook_due_ms(std::int64_t after_ms) = 0;  // earliest next_attempt_at > after_ms of a pending delivery
  // Appends the attempt and moves the delivery on; false when the delivery is gone (session deleted).
  virtual bool record_webhook_attempt(const webhook_attempt_outcome& outcome) = 0;
  // Queues a delivery again now, with a fresh retry schedule; false when there is no such delivery.
  virtual bool requeue_webhook_delivery(std::string_view delivery_id, std::int64_t now_ms) = 0;
};

}  // namespace agw::core
