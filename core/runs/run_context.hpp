#pragma once
// What an agent sees of its run: the conversation so far, the session's config,
// tools, and calls that publish events. Everything runs on the session strand.
// token() keeps the exact concatenation of streamed tokens, which is what the
// run persists, also on abort and failure.
#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/checkpoint.hpp"
#include "core/runs/run.hpp"
#include "core/runs/session_channel.hpp"
#include "core/tools/client_tool.hpp"
#include "core/tools/tool_runner.hpp"

namespace agw::core {

struct usage_figures {
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  std::optional<double> estimated_cost;  // nullopt: no price known for the model (published as null)
  std::string provider;
  std::string model;
};

struct run_failure {
  std::string code;
  std::string message;
};

class run_context {
 public:
  run_context(std::shared_ptr<session_channel> channel, std::shared_ptr<run> r, session_record session,
              conversation_state conversation, tool_runner& tools, std::int64_t checkpoint_version);

  // --- events ---
  // Agents pace before publishing, asking first:
  //   if (ctx.pace_due()) co_await ctx.pace();
  // pace() waits while storage is behind (the high watermark), and otherwise lets the
  // others on the io thread go once the run has published yield_every events since its
  // last sleep, watermark wait or yield, so a full-speed run shares the thread.
  // pace_due() says whether pace() would do either: the usual answer is no, and asking
  // costs no coroutine frame, where every co_await of pace() makes one. (Awaiting pace()
  // unasked is as correct, only dearer.) publish() itself never waits. (Event payloads
  // are built outside co_await expressions: GCC 12 miscompiles braced temporaries
  // inside them.)
  bool pace_due() const { return published_since_yield_ >= yield_every || channel_->above_watermark(); }
  boost::asio::awaitable<void> pace();
  void publish(event_type type, const boost::json::object& data);
  void publish_status(std::string_view status);
  void publish_token(std::string_view text);  // also appends to content()
  void publish_tool_call(const std::string& id, const std::string& name, const boost::json::object& args);
  void publish_tool_result(const std::string& tool_call_id, const std::string& output, int exit_code);

  // --- tools: runs the tool off the io threads and records the step in the checkpoint ---
  struct tool_request {
    std::string id;
    std::string name;
    boost::json::object args;
  };
  // Emits tool_call/tool_result around each call; returns the outcomes in order.
  boost::asio::awaitable<std::vector<tool_outcome>> call_tools(const std::vector<tool_request>& calls);

  // --- client tools (docs/frontends.md, "Front-end tools"): declared by the run's client ---
  const std::vector<client_tool>& client_tools() const { return client_tools_; }
  void set_client_tools(std::vector<client_tool> tools) { client_tools_ = std::move(tools); }
  // Publishes a tool_call per call and keeps the calls for the run's answer, which
  // carries them: the client runs them, and its results start the next run. The
  // agent returns after this (the run ends, nothing open).
  boost::asio::awaitable<void> hand_to_client(const std::vector<tool_request>& calls);
  // The calls handed to the client: the answer's tool_calls ([{"id","name","args"}]).
  const boost::json::array& client_calls() const { return client_calls_; }

  // --- state ---
  bool aborted() const { return run_->abort_requested(); }
  // Deadlines are time().steady_now() + d; an abort ends the sleep early (false).
  boost::asio::awaitable<bool> sleep_until(steady_time t);
  const clock& time() const { return run_->time(); }
  void fail(std::string code, std::string message) { failure_ = run_failure{std::move(code), std::move(message)}; }
  const std::optional<run_failure>& failure() const { return failure_; }
  usage_figures& usage() { return usage_; }
  const std::string& content() const { return content_; }
  std::int64_t tokens_streamed() const { return tokens_; }

  const session_record& session() const { return session_; }
  const boost::json::object& config() const { return session_.config; }
  const conversation_state& conversation() const { return conversation_; }
  // For appending: checkpoint() writes only the messages added since the last one, so
  // a message already checkpointed must not be changed in place.
  conversation_state& conversation() { return conversation_; }
  const std::string& user_message_id() const { return user_message_id_; }
  std::int64_t checkpoint_version() const { return checkpoint_version_; }  // the newest one this run wrote
  const tool_registry& tools() const { return tools_.tools(); }
  run& current_run() { return *run_; }
  session_channel& channel() { return *channel_; }

  // Writes the conversation as the next checkpoint version (and its projection),
  // and `outbox` (the run's completion callback) in the same transaction.
  boost::asio::awaitable<void> checkpoint(std::optional<webhook_delivery_record> outbox = std::nullopt);

 private:
  std::shared_ptr<session_channel> channel_;
  std::shared_ptr<run> run_;
  session_record session_;
  conversation_state conversation_;
  tool_runner& tools_;
  std::int64_t checkpoint_version_;
  // Messages the newest version this run knows holds: the conversation it started
  // from, then each of its committed checkpoints. The next delta starts here.
  std::size_t checkpointed_messages_;
  std::string user_message_id_;
  std::string content_;
  std::int64_t tokens_ = 0;
  static constexpr std::uint32_t yield_every = 8;
  std::uint32_t published_since_yield_ = 0;  // events published since the last sleep, watermark wait or yield
  std::optional<run_failure> failure_;
  usage_figures usage_;
  std::vector<client_tool> client_tools_;
  boost::json::array client_calls_;
};

}  // namespace agw::core
