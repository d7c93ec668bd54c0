#include "core/agents/openai/upstream_step.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/this_coro.hpp>

#include "core/agents/openai/abort_watch.hpp"
#include "core/agents/openai/abortable.hpp"
#include "core/agents/openai/chat_stream_reader.hpp"
#include "core/agents/openai/upstream_failure.hpp"

namespace agw::core::openai {

namespace net = boost::asio;
using exchange_ptr = std::shared_ptr<streaming_http_exchange>;

namespace {

// (Helpers take ctx and plan by reference: stream_step's caller owns both and awaits at once.)

constexpr std::size_t error_body_limit = 64 * 1024;

streaming_request make_request(const run_plan& plan, std::string body) {
  streaming_request r;
  r.url = plan.url;
  r.body = std::move(body);
  r.headers = {{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}};
  if (!plan.api_key.empty()) r.headers.emplace_back("Authorization", "Bearer " + plan.api_key);
  r.connect_timeout = plan.limits.connect_timeout;
  r.idle_timeout = plan.limits.idle_timeout;
  return r;
}

void fail(run_context& ctx, const upstream_failure& f) {
  spdlog::info("run {}: upstream failed: {} {}", ctx.current_run().id(), f.code, f.message);
  ctx.fail(f.code, f.message);
}

// The body of an error answer, up to a bound (its message is all we want).
net::awaitable<std::string> read_error_body(run_context& ctx, exchange_ptr ex) {
  std::string body;
  while (body.size() < error_body_limit) {
    auto reading = ex->read_some();
    auto piece = co_await unless_aborted(ctx, std::move(reading));
    if (!piece || piece->error) break;
    body += piece->data;
    if (piece->end) break;
  }
  ex->cancel();
  co_return body;
}

// How long to wait before try `attempt` + 1, or nullopt when not worth waiting.
std::optional<std::chrono::milliseconds> backoff(const upstream_failure& f, const run_plan& plan, int attempt) {
  if (!f.retryable || attempt >= plan.limits.max_retries) return std::nullopt;
  const auto delay = f.retry_after.value_or(plan.limits.retry_base * (1 << attempt));
  if (delay > plan.limits.retry_after_cap) return std::nullopt;
  return delay;
}

// The exchange once its answer is 2xx, or nullptr when the run failed or was aborted.
net::awaitable<exchange_ptr> open_upstream(run_context& ctx, const run_plan& plan, streaming_http_client& http) {
  const auto executor = co_await net::this_coro::executor;
  // config.context bounds what the provider is sent; the stored conversation stays whole.
  const auto& whole = ctx.conversation();
  conversation_state window;
  if (plan.context.bounded()) window.messages = bound_conversation(whole.messages, plan.context, ctx.time().wall_ms());
  const auto body = chat_request_body(plan.chat, plan.context.bounded() ? window : whole, plan.tools, plan.client_tools);
  for (int attempt = 0;; ++attempt) {
    auto ex = http.prepare(executor, make_request(plan, body));
    auto opening = ex->open();
    auto opened = co_await unless_aborted(ctx, std::move(opening));
    if (!opened) co_return nullptr;
    upstream_failure failure;
    if (opened->error) {
      failure = transport_failure(opened->error, opened->detail, false);
    } else if (ex->head().status / 100 == 2) {
      co_return ex;
    } else {
      auto reading = read_error_body(ctx, ex);
      const auto text = co_await std::move(reading);
      failure = status_failure(ex->head().status, text, ex->head().find("retry-after"));
    }
    const auto delay = backoff(failure, plan, attempt);
    if (!delay) {
      fail(ctx, failure);
      co_return nullptr;
    }
    spdlog::info("run {}: upstream {} ({}), trying again in {} ms", ctx.current_run().id(), failure.code, failure.message,
                 delay->count());
    auto sleeping = ctx.sleep_until(ctx.time().steady_now() + *delay);
    if (!co_await std::move(sleeping)) co_return nullptr;
  }
}

// Fails the run when a chunk is garbage or the upstream's error; true when it is neither.
bool chunk_usable(run_context& ctx, const chat_chunk& chunk) {
  if (chunk.malformed) {
    fail(ctx, {"upstream_protocol", "the upstream sent a chunk that is not a JSON object", false, {}});
    return false;
  }
  if (chunk.error) {
    fail(ctx, {"upstream_error", chunk.error->message, false, {}});
    return false;
  }
  return true;
}

// Reads the answer to its end; out.finished unless it failed or the run was aborted.
net::awaitable<void> read_answer(run_context& ctx, exchange_ptr ex, step_result& out) {
  chat_stream_reader reader;
  tool_call_assembler calls;
  std::vector<chat_chunk> chunks;
  const abort_watch watching(ctx, ex);
  for (bool end = false; !end && !reader.saw_done();) {
    auto reading = ex->read_some();
    const auto piece = co_await std::move(reading);
    if (ctx.aborted()) co_return;  // the watch cancelled the read and closed the connection
    if (piece.error) co_return fail(ctx, transport_failure(piece.error, piece.detail, true));
    end = piece.end;
    if (!reader.feed(piece.data, chunks))
      co_return fail(ctx, {"upstream_protocol", "the upstream sent a line longer than the parser's limit", false, {}});
    if (end) reader.finish(chunks);
    // Each chunk's events are published here, in the loop, rather than in a coroutine of
    // their own: that would cost a frame per chunk, and most chunks are one token.
    for (const auto& chunk : chunks) {
      if (!chunk_usable(ctx, chunk)) co_return;
      if (!chunk.reasoning.empty()) {
        if (ctx.pace_due()) co_await ctx.pace();
        ctx.publish(event_type::reasoning, {{"content", chunk.reasoning}});
      }
      if (!chunk.content.empty()) {
        if (ctx.pace_due()) co_await ctx.pace();
        ctx.publish_token(chunk.content);
      }
      for (const auto& f : chunk.tool_calls) calls.add(f);
      if (chunk.usage) out.usage = chunk.usage;
      if (ctx.aborted()) co_return;
    }
    chunks.clear();
  }
  if (!reader.complete())
    co_return fail(ctx, {"upstream_incomplete", "the upstream's stream ended without [DONE] or a finish_reason", false, {}});
  out.calls = calls.finish();
  out.finished = true;
}

}  // namespace

net::awaitable<step_result> stream_step(run_context& ctx, const run_plan& plan, streaming_http_client& http) {
  step_result out;
  auto opening = open_upstream(ctx, plan, http);
  auto ex = co_await std::move(opening);
  if (!ex) co_return out;
  auto reading = read_answer(ctx, ex, out);
  co_await std::move(reading);
  // [DONE], a failure or an abort: nothing more is read, and the upstream sees us hang up.
  ex->cancel();
  co_return out;
}

}  // namespace agw::core::openai
