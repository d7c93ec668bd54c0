#include "core/runs/run_driver.hpp"

#include <spdlog/spdlog.h>

#include "core/ids.hpp"
#include "core/runs/run_context.hpp"
#include "core/storage/store_error.hpp"
#include "core/webhooks/webhook_delivery.hpp"

namespace agw::core {

namespace net = boost::asio;

namespace {

// Whole amounts print as integers ("0", not Boost.JSON's "0E0").
boost::json::value json_number(double v) {
  if (v == static_cast<double>(static_cast<std::int64_t>(v)) && v > -1e15 && v < 1e15) return static_cast<std::int64_t>(v);
  return v;
}

// Runs the agent to the end of its content; its failures become the run's failure.
// (Helpers here take the run_context by reference: drive_run's frame owns it and awaits
// each of them at once.)
net::awaitable<void> run_agent(run_context& ctx, std::shared_ptr<agent> agent_impl) {
  std::exception_ptr failure;
  try {
    ctx.publish_status("thinking");
    auto running = agent_impl->run(ctx);
    co_await std::move(running);
  } catch (...) {
    failure = std::current_exception();
  }
  if (!failure) co_return;
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    spdlog::warn("run {}: agent failed: {}", ctx.current_run().id(), e.what());
    ctx.fail("agent_error", e.what());
  }
}

// How the run ended, as events: aborted or error, then usage.
void publish_ending(run_context& ctx, bool aborted) {
  if (aborted)
    ctx.publish_status("aborted");
  else if (ctx.failure())
    ctx.publish(event_type::error, {{"code", ctx.failure()->code}, {"message", ctx.failure()->message}});
  auto& usage = ctx.usage();
  usage.output_tokens = std::max(usage.output_tokens, ctx.tokens_streamed());
  ctx.publish(event_type::usage,
              {{"input_tokens", usage.input_tokens},
               {"output_tokens", usage.output_tokens},
               {"estimated_cost", usage.estimated_cost ? json_number(*usage.estimated_cost) : boost::json::value(nullptr)},
               {"provider", usage.provider},
               {"model", usage.model}});
}

// Persists the answer (with the callback's outbox row, in one transaction), then
// announces it with done. Throws when storage refused the end.
net::awaitable<void> persist_and_announce(run_context& ctx, const run_request& request, message_record& answer, bool aborted) {
  if (ctx.pace_due()) co_await ctx.pace();
  publish_ending(ctx, aborted);
  answer.content = ctx.content();
  answer.tool_calls = ctx.client_calls();  // calls left to the client: the answer asks for them
  answer.token_count = ctx.tokens_streamed();
  answer.model_used = ctx.usage().model;
  answer.created_at_ms = ctx.time().wall_ms();
  auto& conversation = ctx.conversation();
  // Positions are set before a message joins the conversation: the next run may start from it.
  answer.seq = static_cast<std::int64_t>(conversation.messages.size() + 1);
  conversation.messages.push_back(answer);
  if (conversation.run) {
    conversation.run->state = aborted ? "aborted" : ctx.failure() ? "error" : "completed";
    conversation.run->ended_at_ms = answer.created_at_ms;
  }
  // The message is durable before done announces it; the callback's outbox row commits with it.
  std::optional<webhook_delivery_record> outbox;
  if (request.callback_url)
    outbox =
        make_webhook_delivery(ctx.session().id, ctx.current_run().id(), *request.callback_url, answer, ctx.usage().input_tokens);
  auto saving = ctx.checkpoint(std::move(outbox));
  co_await std::move(saving);
  if (request.callback_url && request.outbox_written) request.outbox_written();
  ctx.publish(event_type::done, {{"assistant_data", message_json(answer)}});
}

// The end could not be persisted: still close the run, so the session stays usable.
void close_unpersisted(run_context& ctx, message_record& answer, const std::exception& why) {
  answer.content = ctx.content();
  answer.token_count = ctx.tokens_streamed();
  if (answer.created_at_ms == 0) answer.created_at_ms = ctx.time().wall_ms();
  if (!ctx.channel().deleting()) {
    spdlog::error("run {}: could not persist its end: {}", ctx.current_run().id(), why.what());
    answer.status = "error";
    ctx.publish(event_type::error, {{"code", "storage_error"}, {"message", "the run's end could not be persisted"}});
  }
  // (Deleted mid-run: its followers still get the run's end, as decided.)
  ctx.publish(event_type::done, {{"assistant_data", message_json(answer)}});
}

// The run's one info line (docs/operations.md, "Logs"): figures only, never contents.
void log_run_end(run_context& ctx, const run& r, const run_request& request, const message_record& answer) {
  if (!spdlog::should_log(spdlog::level::info)) return;
  const auto& usage = ctx.usage();
  spdlog::info(
      "run request_id={} session={} run_id={} status={} duration_ms={} events={} input_tokens={} output_tokens={} provider={}",
      request.request_id.empty() ? "-" : request.request_id, ctx.session().id, r.id(), answer.status,
      ctx.time().wall_ms() - r.started_at_ms(), ctx.channel().last_assigned_id() - r.events_before(), usage.input_tokens,
      usage.output_tokens, usage.provider.empty() ? "-" : usage.provider);
}

}  // namespace

net::awaitable<void> drive_run(std::shared_ptr<session_channel> channel, std::shared_ptr<run> r, run_request request,
                               std::shared_ptr<agent> agent_impl, tool_runner& tools, metrics& stats) {
  stats.runs_started++;
  stats.runs_live++;
  run_context ctx(channel, r, std::move(request.session), std::move(request.conversation), tools, request.checkpoint_version);
  ctx.set_client_tools(std::move(request.client_tools));
  if (request.taken_up_to) channel->note_taken(request.taken_up_to);
  if (!request.dequeued.empty()) {
    boost::json::array ids;
    for (const auto& id : request.dequeued) ids.emplace_back(id);
    boost::json::object data{{"status", "dequeued"}, {"message_ids", std::move(ids)}};
    channel->publish(r->id(), event_type::status, data, event_source::system);
  }
  auto running = run_agent(ctx, std::move(agent_impl));
  co_await std::move(running);

  // How the run ended decides the closing events; the content is what was streamed.
  // Same strand step as request_abort's check on the abort endpoint: no abort slips in after this.
  r->mark_finishing();
  const bool aborted = r->abort_requested();
  message_record answer;
  answer.id = new_uuid();
  answer.session_id = ctx.session().id;
  answer.role = "assistant";
  answer.parent_id = ctx.user_message_id();
  answer.source = std::string(name_of(r->source()));
  answer.status = aborted ? "aborted" : ctx.failure() ? "error" : "complete";
  std::exception_ptr ending_failure;
  // Another node took the run's lease (it closes the run in the store): nothing more of
  // it is written here, neither events nor its checkpoint.
  bool fenced = channel->fenced();
  if (fenced) answer.status = "interrupted";
  try {
    if (!fenced) {
      auto ending = persist_and_announce(ctx, request, answer, aborted);
      co_await std::move(ending);
    }
  } catch (...) {
    ending_failure = std::current_exception();
  }
  // (Deleted mid-run: the lease went with the session's rows; the end still reaches its
  // followers, unstored, as close_unpersisted says.)
  if (ending_failure && !fenced && !channel->deleting()) {
    // The final checkpoint was refused as fenced out: stop as if the events had been.
    try {
      std::rethrow_exception(ending_failure);
    } catch (const fenced_out&) {
      channel->fence_out();
      fenced = true;
      answer.status = "interrupted";
    } catch (...) {
    }
  }
  if (fenced) {
    // Nothing to give back: the conversation the survivor closed is newer.
  } else if (ending_failure) {
    try {
      std::rethrow_exception(ending_failure);
    } catch (const std::exception& e) {
      close_unpersisted(ctx, answer, e);
    }
  } else if (request.conversation_saved && !channel->deleting()) {
    // Before the session is free for its next run, which starts from this.
    request.conversation_saved(std::move(ctx.conversation()), ctx.checkpoint_version());
  }
  auto committing = channel->wait_committed();
  co_await std::move(committing);
  if (channel->live_run() == r) channel->set_live_run(nullptr);  // e.g. the session was deleted
  log_run_end(ctx, *r, request, answer);
  stats.runs_live--;
  // Counted by how the run really ended: an end that could not be stored is an error.
  if (fenced) {
    // counted as runs_fenced_out by the channel
  } else if (aborted)
    stats.runs_aborted++;
  else if (answer.status == "error")
    stats.runs_failed++;
  else
    stats.runs_completed++;
}

}  // namespace agw::core
