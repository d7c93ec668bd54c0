#include "core/runs/run_driver.hpp"

#include <spdlog/spdlog.h>

#include "core/ids.hpp"
#include "core/runs/run_context.hpp"
#include "core/webhooks/webhook_delivery.hpp"

namespace agw::core {

namespace net = boost::asio;

namespace {

// Whole amounts print as integers ("0", not Boost.JSON's "0E0").
boost::json::value json_number(double v) {
  if (v == static_cast<double>(static_cast<std::int64_t>(v)) && v > -1e15 && v < 1e15) return static_cast<std::int64_t>(v);
  return v;
}

}  // namespace

net::awaitable<void> drive_run(std::shared_ptr<session_channel> channel, std::shared_ptr<run> r, run_request request,
                               std::shared_ptr<agent> agent_impl, tool_runner& tools, metrics& stats) {
  stats.runs_started++;
  stats.runs_live++;
  run_context ctx(channel, r, std::move(request.session), std::move(request.conversation), tools, request.checkpoint_version);
  std::exception_ptr failure;
  try {
    ctx.publish_status("thinking");
    auto running = agent_impl->run(ctx);
    co_await std::move(running);
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      spdlog::warn("run {}: agent failed: {}", r->id(), e.what());
      ctx.fail("agent_error", e.what());
    }
  }

  // How the run ended decides the closing events; the content is what was streamed.
  // Same strand step as request_abort's check on the abort endpoint: no abort slips in after this.
  r->mark_finishing();
  const bool aborted = r->abort_requested();
  const std::string status = aborted ? "aborted" : ctx.failure() ? "error" : "complete";
  message_record answer;
  answer.id = new_uuid();
  answer.session_id = ctx.session().id;
  answer.role = "assistant";
  answer.parent_id = ctx.user_message_id();
  std::exception_ptr ending_failure;
  try {
    co_await ctx.pace();
    if (aborted) ctx.publish_status("aborted");
    else if (ctx.failure()) ctx.publish(event_type::error, {{"code", ctx.failure()->code}, {"message", ctx.failure()->message}});
    auto& usage = ctx.usage();
    usage.output_tokens = std::max(usage.output_tokens, ctx.tokens_streamed());
    ctx.publish(event_type::usage, {{"input_tokens", usage.input_tokens},
                          {"output_tokens", usage.output_tokens},
                          {"estimated_cost", json_number(usage.estimated_cost)},
                          {"provider", usage.provider},
                          {"model", usage.model}});

    answer.content = ctx.content();
    answer.token_count = ctx.tokens_streamed();
    answer.model_used = usage.model;
    answer.status = status;
    answer.created_at_ms = ctx.time().wall_ms();
    auto& conversation = ctx.conversation();
    conversation.messages.push_back(answer);
    answer.seq = static_cast<std::int64_t>(conversation.messages.size());
    if (conversation.run) {
      conversation.run->state = aborted ? "aborted" : ctx.failure() ? "error" : "completed";
      conversation.run->ended_at_ms = answer.created_at_ms;
    }
    // The message is durable before done announces it; the callback's outbox row commits with it.
    std::optional<webhook_delivery_record> outbox;
    if (request.callback_url)
      outbox = make_webhook_delivery(ctx.session().id, r->id(), *request.callback_url, answer, usage.input_tokens);
    auto saving = ctx.checkpoint(std::move(outbox));
    co_await std::move(saving);
    if (request.callback_url && request.outbox_written) request.outbox_written();
    channel->publish(r->id(), event_type::done, {{"assistant_data", message_json(answer)}});
  } catch (...) {
    ending_failure = std::current_exception();
  }
  if (ending_failure) {
    try {
      std::rethrow_exception(ending_failure);
    } catch (const std::exception& e) {
      answer.content = ctx.content();
      answer.token_count = ctx.tokens_streamed();
      if (answer.created_at_ms == 0) answer.created_at_ms = ctx.time().wall_ms();
      if (channel->deleting()) {
        // The session was deleted mid-run: its followers still get the run's end.
        answer.status = status;
      } else {
        // Storage failed at the end: still close the run so the session stays usable.
        spdlog::error("run {}: could not persist its end: {}", r->id(), e.what());
        answer.status = "error";
        channel->publish(r->id(), event_type::error, {{"code", "storage_error"}, {"message", "the run's end could not be persisted"}});
      }
      channel->publish(r->id(), event_type::done, {{"assistant_data", message_json(answer)}});
    }
  }
  auto committing = channel->wait_committed();
  co_await std::move(committing);
  if (channel->live_run() == r) channel->set_live_run(nullptr);  // e.g. the session was deleted
  stats.runs_live--;
  // Counted by how the run really ended: an end that could not be stored is an error.
  if (aborted) stats.runs_aborted++;
  else if (answer.status == "error") stats.runs_failed++;
  else stats.runs_completed++;
}

}  // namespace agw::core
