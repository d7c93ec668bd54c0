#pragma once
// Port: the messages a session queued while a run was live (multitask enqueue,
// docs/timeline.md), kept until the session's next run takes them, in arrival
// order. Deleting the session deletes them. Used on a store connection's thread
// only; throws store_error.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace agw::core {

struct queued_message_record {
  std::string id;  // the id the user message will have in the conversation
  std::string session_id;
  std::string content;
  std::string source;  // an event_source name
  std::int64_t created_at_ms = 0;
  std::int64_t seq = 0;  // the store's, increasing with every message queued (any session)
};

class message_queue {
 public:
  virtual ~message_queue() = default;
  // Returns the message's seq. Refused (store_error) for an unknown session or an id already queued.
  virtual std::int64_t enqueue_message(const queued_message_record& m) = 0;
  // Every queued message of the session, oldest first, removed from the queue.
  virtual std::vector<queued_message_record> take_queued_messages(std::string_view session_id) = 0;
  // How many wait (cheap: for the session's view and start-up).
  virtual std::int64_t queued_message_count(std::string_view session_id) = 0;
};

}  // namespace agw::core
