#pragma once
// One connection to a store: the unit of work that core's services use. It offers
// every storage port (each names what it holds: session_catalog,
// conversation_store, event_log, idempotency_keys, message_queue, webhook_outbox,
// sweep_lock, run_leases) and the transaction control the store_executor uses, so
// that what several ports write in one job commits or rolls back together (the final
// checkpoint with its webhook outbox row).
//
// NOT thread-safe: the store_executor owns every connection and calls each from
// one of its own threads, so no io thread ever touches storage. Code that needs
// one port takes that port; a job gets the whole connection.
#include "core/storage/conversation_store.hpp"
#include "core/storage/event_log.hpp"
#include "core/storage/idempotency_keys.hpp"
#include "core/storage/message_queue.hpp"
#include "core/storage/run_leases.hpp"
#include "core/storage/session_catalog.hpp"
#include "core/storage/session_state_store.hpp"
#include "core/storage/store_error.hpp"
#include "core/storage/sweep_lock.hpp"
#include "core/storage/webhook_outbox.hpp"

namespace agw::core {

class store_connection : public session_catalog,
                         public conversation_store,
                         public event_log,
                         public idempotency_keys,
                         public message_queue,
                         public webhook_outbox,
                         public session_state_store,
                         public sweep_lock,
                         public run_leases {
 public:
  // Transactions. The executor wraps each write job in a savepoint inside one
  // batch transaction, so many jobs share one commit (group commit).
  virtual void begin_batch() = 0;
  virtual void commit_batch() = 0;
  virtual void rollback_batch() = 0;
  virtual void savepoint() = 0;
  virtual void release_savepoint() = 0;
  virtual void rollback_to_savepoint() = 0;
  // Whether a batch transaction is open (a store may end one by itself on some errors).
  virtual bool batch_open() = 0;
};

}  // namespace agw::core
