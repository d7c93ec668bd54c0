#pragma once
// Plain rows that cross the store interface.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace agw::core {

struct message_record {
  std::string id;
  std::string session_id;
  std::int64_t seq = 0;  // position in the conversation, 1-based
  std::string role;      // user | assistant | system | tool
  std::string content;
  boost::json::array tool_calls;  // [{"id","name","args"}]
  std::optional<std::string> tool_call_id;
  std::optional<std::int64_t> token_count;
  std::optional<std::string> model_used;
  std::optional<std::string> parent_id;
  std::string status = "complete";  // complete | aborted | error | interrupted
  std::int64_t created_at_ms = 0;
  // Who wrote it (core/events/event_source.hpp); empty for a message stored before
  // sources, read as its role's default (message_source()).
  std::string source;
};

struct message_page {
  std::vector<message_record> messages;
  std::int64_t total = 0;
};

struct checkpoint_record {
  std::string thread_id;
  std::string session_id;
  std::int64_t version = 0;
  std::string state;  // JSON text: {"messages": [...], "run": {...}}
  std::int64_t created_at_ms = 0;
};

struct event_batch_record {
  std::string session_id;
  std::int64_t first_id = 0;
  std::int64_t last_id = 0;
  std::string frames;  // the events first_id..last_id in log_codec's encoding
  std::int64_t created_at_ms = 0;
};

struct idempotency_record {
  std::string session_id;
  std::string key;
  std::string content_hash;
  std::string run_id;
  std::int64_t first_event_id = 0;  // events of that run start after this id
  std::int64_t created_at_ms = 0;
};

// One completion callback to deliver (the outbox row), and its attempts.
struct webhook_attempt_record {
  std::int64_t attempt = 0;  // 1-based over the delivery's whole life (redeliveries go on counting)
  std::int64_t at_ms = 0;
  std::optional<int> status_code;
  std::optional<std::string> error;
  std::int64_t duration_ms = 0;
};

struct webhook_delivery_record {
  std::string id;          // delivery id (API)
  std::string webhook_id;  // the webhook-id header: stable across retries
  std::string session_id;
  std::string run_id;
  std::string url;
  std::string payload;              // the exact JSON body sent
  std::string status = "pending";   // pending | delivered | failed
  std::int64_t round_attempts = 0;  // attempts since it was (re)queued: the retry schedule's position
  std::optional<std::int64_t> next_attempt_at_ms;
  std::int64_t created_at_ms = 0;
  // An event webhook's batch: its first event id. The outbox sends a session's batches
  // one after another in this order (a completion callback has none: sent when due).
  std::optional<std::int64_t> event_first_id;
  std::vector<webhook_attempt_record> attempts;  // filled by listings only
};

// The outcome of one attempt, written with the delivery's new state in one statement pair.
struct webhook_attempt_outcome {
  std::string delivery_id;
  webhook_attempt_record attempt;
  std::string status;  // the delivery's status after it
  std::optional<std::int64_t> next_attempt_at_ms;
};

}  // namespace agw::core
