#include "core/runs/run_context.hpp"

#include "core/storage/store_error.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/ids.hpp"
#include "core/projection.hpp"

namespace agw::core {

namespace net = boost::asio;

run_context::run_context(std::shared_ptr<session_channel> channel, std::shared_ptr<run> r, session_record session,
                         conversation_state conversation, tool_runner& tools, std::int64_t checkpoint_version)
    : channel_(std::move(channel)),
      run_(std::move(r)),
      session_(std::move(session)),
      conversation_(std::move(conversation)),
      tools_(tools),
      checkpoint_version_(checkpoint_version),
      checkpointed_messages_(conversation_.messages.size()) {
  if (!conversation_.messages.empty()) user_message_id_ = conversation_.messages.back().id;
}

net::awaitable<void> run_context::pace() {
  // Bounded: a run that outpaces storage waits here instead of growing memory.
  if (channel_->above_watermark()) {
    co_await channel_->wait_below_watermark();
    published_since_yield_ = 0;  // it waited: others on the thread had their turn
  } else if (published_since_yield_ >= yield_every) {
    // A run that never waits (a full-speed mock, an upstream whose tokens are already
    // read) lets the others on its io thread go every yield_every events. One that sleeps
    // between its events (sleep_until) gives the thread up each time, and needs no extra
    // turn. (Other waits, a tool's or an upstream read's, do not restart the count: at
    // worst the run yields sooner than it needed to.)
    published_since_yield_ = 0;
    co_await net::post(channel_->strand(), net::use_awaitable);
  }
}

net::awaitable<bool> run_context::sleep_until(steady_time t) {
  // The sleep gives the io thread up: a timer's completion is always queued, never run
  // inside the wait's call. (An aborted run's sleep returns at once, but the run then ends.)
  published_since_yield_ = 0;
  return run_->sleep_until(t);
}

void run_context::publish(event_type type, const boost::json::object& data) {
  ++published_since_yield_;
  channel_->publish(run_->id(), type, data, run_->source());
}

void run_context::publish_status(std::string_view s) {
  ++published_since_yield_;
  channel_->publish(run_->id(), event_type::status, "status", s, run_->source());
}

void run_context::publish_token(std::string_view text) {
  content_ += text;
  ++tokens_;
  ++published_since_yield_;
  channel_->publish(run_->id(), event_type::token, "content", text, run_->source());
}

void run_context::publish_tool_call(const std::string& id, const std::string& name, const boost::json::object& args) {
  publish(event_type::tool_call, {{"id", id}, {"name", name}, {"args", args}});
}

void run_context::publish_tool_result(const std::string& tool_call_id, const std::string& output, int exit_code) {
  publish(event_type::tool_result, {{"tool_call_id", tool_call_id}, {"output", output}, {"exit_code", exit_code}});
}

net::awaitable<std::vector<tool_outcome>> run_context::call_tools(const std::vector<tool_request>& calls) {
  std::vector<tool_outcome> outcomes;
  if (calls.empty()) co_return outcomes;
  if (pace_due()) co_await pace();
  publish_status("tool");
  // The assistant turn that asked for the tools, then one tool message per result.
  message_record asked;
  asked.id = new_uuid();
  asked.session_id = session_.id;
  asked.role = "assistant";
  asked.source = std::string(name_of(run_->source()));
  asked.parent_id = user_message_id_;
  asked.created_at_ms = time().wall_ms();
  for (const auto& c : calls) asked.tool_calls.push_back({{"id", c.id}, {"name", c.name}, {"args", c.args}});
  asked.seq = static_cast<std::int64_t>(conversation_.messages.size() + 1);
  conversation_.messages.push_back(asked);
  for (const auto& c : calls) {
    if (pace_due()) co_await pace();
    publish_tool_call(c.id, c.name, c.args);
    auto running = tools_.run(c.name, c.args);
    auto outcome = co_await std::move(running);
    if (pace_due()) co_await pace();
    publish_tool_result(c.id, outcome.result.output, outcome.result.exit_code);
    message_record result;
    result.id = new_uuid();
    result.session_id = session_.id;
    result.role = "tool";
    result.source = std::string(name_of(run_->source()));
    result.content = outcome.result.output;
    result.tool_call_id = c.id;
    result.parent_id = asked.id;
    result.status = outcome.status == tool_outcome::kind::ok ? "complete" : "error";
    result.created_at_ms = time().wall_ms();
    result.seq = static_cast<std::int64_t>(conversation_.messages.size() + 1);
    conversation_.messages.push_back(std::move(result));
    outcomes.push_back(std::move(outcome));
    if (aborted()) break;
  }
  co_await checkpoint();
  co_return outcomes;
}

net::awaitable<void> run_context::hand_to_client(const std::vector<tool_request>& calls) {
  for (const auto& c : calls) {
    if (pace_due()) co_await pace();
    publish_tool_call(c.id, c.name, c.args);
    client_calls_.push_back(boost::json::object{{"id", c.id}, {"name", c.name}, {"args", c.args}});
  }
}

net::awaitable<void> run_context::checkpoint(std::optional<webhook_delivery_record> outbox) {
  // The messages the newest version already holds are unchanged (a run only appends):
  // the version holds what the run added since (and its state), so the write, its
  // projection rows and the chain's bytes cost what the run added, not the conversation,
  // and not this run's earlier messages again.
  auto delta = make_checkpoint_delta(session_, ++checkpoint_version_, conversation_, checkpointed_messages_);
  // The run waits for this write, so its conversation stands still until the job is done.
  delta.whole_state = &conversation_;
  // Fenced like the run's events: a run whose lease another node took writes no checkpoint.
  auto write = [&time = time(), delta = std::move(delta), outbox = std::move(outbox), fence = channel_->fence_token(),
                session_id = session_.id](store_connection& c) {
    if (fence != 0) {
      auto held = c.find_run_lease(session_id);
      if (!held || held->token != fence) throw fenced_out("the session's run lease was taken");
    }
    save_checkpoint(c, time, delta);
    if (outbox) c.insert_webhook_delivery(*outbox);
  };
  co_await channel_->store().async_write(std::move(write), net::use_awaitable);
  // Counted only once committed: a delta starts from what the store holds. (A failed write
  // ends the run's checkpoints: its version number is spent, and the store refuses the next.)
  checkpointed_messages_ = conversation_.messages.size();
}

}  // namespace agw::core
