#pragma once
// The session timeline's use cases besides runs (docs/timeline.md): custom events
// posted into a session's event sequence, and an operator's message (manual mode's
// human answer). Custom events are numbered and committed like a run's events and
// start nothing; an operator message is a run of its own with a human source: it
// holds the session while its assistant message is checkpointed and published (as
// tokens then done, or as one `message` event), so conversation writes never race.
//
// Executor: every method is an awaitable on the caller's executor; the steps that
// publish hop to the session channel's strand and back. No mutable state of its own
// (the conversation cache is run_service's, thread-safe).
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "core/events/event_source.hpp"
#include "core/session.hpp"
#include "core/store_records.hpp"

namespace agw::core {

class clock;
class conversation_cache;
class session_hub;
class store_executor;

struct custom_event {
  boost::json::object data;  // validated: at most max_custom_data_bytes of JSON
  event_source source = event_source::customer_ui;
};

struct operator_message {
  std::string content;  // validated: a non-blank string
  event_source source = event_source::human_agent;
  bool stream = false;  // as tokens then done (rendered like an agent's answer), else one `message` event
};

struct operator_reply {
  message_record message;
  std::string run_id;  // the operator turn's id (its token and done events carry it)
};

class timeline_service {
 public:
  static constexpr std::size_t max_custom_data_bytes = 16 * 1024;

  timeline_service(store_executor& store, session_hub& hub, std::shared_ptr<conversation_cache> conversations, const clock& time);

  // Appends a `custom` event to the session's sequence; returns its id once committed.
  boost::asio::awaitable<std::int64_t> append_custom(session_record session, custom_event event);

  // Stores the operator's assistant-side message and delivers it to the session's
  // subscribers. api_error(run_in_progress) while a run (or another operator message) is live.
  boost::asio::awaitable<operator_reply> post_operator_message(session_record session, operator_message message);

 private:
  store_executor& store_;
  session_hub& hub_;
  std::shared_ptr<conversation_cache> conversations_;
  const clock& clock_;
};

}  // namespace agw::core
