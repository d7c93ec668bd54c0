#pragma once
// The run use cases: starting a run (the Idempotency-Key lookup, reserving the
// session on its channel's strand, what a message does while another run is live
// — multitask reject (409), enqueue or interrupt —, the user message's checkpoint
// write, then drive_run), holding a message without a run (manual mode), starting
// the run of the queued messages when the live run ends, and aborting the live run.
// Owns the storage access of all of them (idempotency keys, the message queue, the
// run-start checkpoint). docs/timeline.md has the decisions.
//
// Executor: every method is an awaitable on the caller's executor; the steps
// that read or change a channel's live run hop to that channel's strand and
// back. Its one mutable part, the conversations kept between runs
// (conversation_cache), is thread-safe: any number of strands may use it at once.
// Time (message stamps, the keys' TTL, the key's wait, the runs' clocks) is the injected clock's.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/runs/conversation_cache.hpp"
#include "core/runs/multitask.hpp"
#include "core/session.hpp"
#include "core/storage/run_leases.hpp"
#include "core/store_records.hpp"
#include "core/tools/client_tool.hpp"

namespace agw::core {

class clock;
class run;
class session_channel;
class session_hub;
class session_service;
class store_executor;
struct metrics;

struct start_request {
  std::string content;                         // validated: a non-blank string (empty: only the queue's messages)
  std::optional<std::string> callback_url;     // checked by the caller (its address too)
  std::optional<std::string> idempotency_key;  // validated: 1..255 printable ASCII
  std::string request_id{};                    // the starting request's X-Request-Id, for the run's log line
  // AG-UI's front-end tools (docs/frontends.md): the tools the client offers this run, and,
  // instead of a user message, its results for the session's pending tool calls (then
  // `content` is unused; a result for a call that is not pending is a bad_request).
  std::vector<client_tool> client_tools{};
  std::vector<client_tool_result> tool_results{};
  std::optional<multitask> policy{};  // the body's multitask; none: the session's config.multitask
  // The caller can answer a message that starts no run (POST /messages' 202): only then
  // may it be queued (enqueue) or held for an operator (manual mode); otherwise those are 409.
  bool may_hold = false;
};

// Which run the caller's stream follows, and from where; or why the message started none.
struct run_start {
  std::shared_ptr<session_channel> channel{};
  std::string run_id{};
  std::int64_t after_id = 0;  // the run's events are the ones after this id
  bool attached = false;      // an Idempotency-Key retry: nothing was stored, the stream attaches
  // Set when no run started: "queued" (a run is live; the run after it answers the message)
  // or "stored" (manual mode: an operator answers). message_id names the message;
  // run_id is the live run's when queued, empty when stored. The queue's own run (no
  // message) says "client_tool_calls" when the queue waits for a client's tool results.
  std::string held{};
  std::string message_id{};
  std::int64_t queued = 0;  // messages waiting, this one included (held == "queued")
};

class run_service {
 public:
  // Keys are kept (and honoured) this long.
  static constexpr std::int64_t idempotency_ttl_ms = 24 * 3600 * 1000;
  // Messages one session may have queued (multitask enqueue); one more is refused with
  // api_error(too_many_requests) and stores nothing.
  static constexpr std::int64_t max_queued_messages = 32;

  // outbox_written: called (any thread) when a run's end wrote a webhook delivery row.
  run_service(store_executor& store, session_hub& hub, session_service& sessions, metrics& stats, const clock& time,
              std::function<void()> outbox_written);

  // Starts a run of `session`'s agent with the user message, durable before it returns;
  // or attaches to the run an earlier request with the same Idempotency-Key started.
  // While a run is live the message follows `multitask` (docs/timeline.md); in manual mode
  // it is stored and no run starts. Every start first takes the session's queued messages.
  // Throws api_error: run_in_progress (with run_id and stream_url), idempotency_mismatch,
  // too_many_requests (the queue is full).
  boost::asio::awaitable<run_start> start(session_record session, start_request request);

  // The conversations kept between runs, shared with the other writers of a conversation
  // (operator messages: timeline_service).
  std::shared_ptr<conversation_cache> conversations() const { return conversations_; }

  // Asks the live run to stop at its next step: its id, or nullopt when nothing runs
  // (or its end is already decided). api_error(not_found) for an unknown session.
  boost::asio::awaitable<std::optional<std::string>> abort(std::string session_id);

  // Run ownership across nodes (docs/scale-out.md): every run takes its session's lease
  // in the job that stores its user message (PostgreSQL decides between nodes: no lease
  // is the 409), renews it every third of `duration` while it lives and releases it
  // when its done is committed. Set before serving.
  struct lease_options {
    std::string node_id = "local";
    std::chrono::milliseconds duration{10000};
  };
  void set_leases(lease_options opts) { leases_ = std::move(opts); }
  const lease_options& leases() const { return leases_; }

  // GATEWAY_MAX_RUNS: at most this many runs admitted at once (0: no limit); one more
  // is refused with api_error(unavailable) and stores nothing. Set before serving.
  void limit_runs(std::size_t max) { max_runs_ = max; }

  // Draining past its deadline: asks every live run to stop at its next step (each
  // then ends as an abort does: persisted as aborted, done sent). Returns at once.
  void abort_all();

 private:
  struct started_run;
  // Queues the message behind the live run; nullopt when no run is live any more.
  boost::asio::awaitable<std::optional<run_start>> enqueue(std::shared_ptr<session_channel> channel, session_record session,
                                                           start_request request);
  // Asks the live run to stop and waits until it has ended (its aborted done released).
  boost::asio::awaitable<void> interrupt(std::shared_ptr<session_channel> channel);
  // Manual mode: the messages are in the checkpoint; announces them and gives the session back.
  boost::asio::awaitable<run_start> hold(std::shared_ptr<session_channel> channel, std::shared_ptr<run> r, session_record session,
                                         started_run started);
  // On the channel's strand: when messages wait and no run is live, starts the run that takes them.
  void start_queued_if_waiting(const std::shared_ptr<session_channel>& channel);
  // Whether to look at the queue again when it ends (false: it waits for a client's tool results).
  boost::asio::awaitable<bool> start_queued(std::shared_ptr<session_channel> channel);
  boost::asio::awaitable<void> start_queued_when_idle(std::shared_ptr<session_channel> channel);
  boost::asio::awaitable<std::optional<idempotency_record>> find_key(const std::string& session_id, const std::string& key);
  boost::asio::awaitable<std::optional<idempotency_record>> wait_for_key(const std::string& session_id, const std::string& key);
  boost::asio::awaitable<run_start> resolve_conflict(const session_record& session, const start_request& request,
                                                     const std::string& hash, const std::string& live_run_id);
  boost::asio::awaitable<started_run> persist_user_message(const std::shared_ptr<session_channel>& channel,
                                                           const std::shared_ptr<run>& r, const session_record& session,
                                                           const start_request& request, const std::string& hash);
  // Counts one more run in metrics::runs_admitted, unless that is over the limit.
  bool admit_run();
  // Moves the request's callback_url, request_id and client_tools into the run.
  void launch(const std::shared_ptr<session_channel>& channel, const std::shared_ptr<run>& r, session_record session,
              started_run started, start_request& request);
  run_start attach(const session_record& session, const idempotency_record& key, const std::string& hash) const;
  // On the channel's strand, while the run lives: renews its lease every third of the
  // lease; a lease found taken fences the run out, an abort recorded by another node stops it.
  struct lease_timer;
  boost::asio::awaitable<void> keep_lease(std::shared_ptr<session_channel> channel, std::shared_ptr<run> r,
                                          run_lease_record lease, std::shared_ptr<lease_timer> timer);
  void release_lease(const run_lease_record& lease);

  store_executor& store_;
  session_hub& hub_;
  session_service& sessions_;
  metrics& stats_;
  const clock& clock_;
  std::function<void()> outbox_written_;
  std::size_t max_runs_ = 0;
  lease_options leases_;
  // Shared with the runs, which give their conversation back when they end.
  std::shared_ptr<conversation_cache> conversations_ = std::make_shared<conversation_cache>();
};

}  // namespace agw::core
