#include "core/agents/mock_agent.hpp"

#include "core/agents/mock_options.hpp"
#include "core/agents/session_variables.hpp"
#include "core/runs/run_context.hpp"

namespace agw::core {

namespace net = boost::asio;

namespace {

// std::isspace in the "C" locale (the process never sets another), without a call per byte.
bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

}  // namespace

std::vector<std::string> mock_tokens(const std::string& content, std::optional<std::int64_t> count) {
  std::vector<std::string> out;
  if (count) {
    out.reserve(static_cast<std::size_t>(*count));
    for (std::int64_t i = 0; i < *count; ++i) out.push_back((i ? " tok" : "tok") + std::to_string(i));
    return out;
  }
  std::size_t i = 0;
  while (i < content.size()) {
    while (i < content.size() && is_space(content[i])) ++i;
    std::size_t start = i;
    while (i < content.size() && !is_space(content[i])) ++i;
    if (i > start) out.push_back((out.empty() ? "" : " ") + content.substr(start, i - start));
  }
  return out;
}

namespace {

// As many as mock_tokens(content) would make, without making them.
std::int64_t count_words(std::string_view content) {
  std::int64_t words = 0;
  bool in_word = false;
  for (char c : content) {
    const bool word = !is_space(c);
    words += word && !in_word;
    in_word = word;
  }
  return words;
}

// The conversation's words, counted at every run: the messages before the newest user
// message (earlier runs') are counted once and kept in the conversation's tally.
std::int64_t count_words(const conversation_state& conversation) {
  const auto& messages = conversation.messages;
  std::size_t stable = messages.size();
  while (stable > 0 && messages[stable - 1].role != "user") --stable;
  if (stable > 0) --stable;  // the newest user message is this run's
  auto& tally = conversation.tally;
  if (tally.counted > stable) tally = {};  // not this conversation's prefix: count again
  for (; tally.counted < stable; ++tally.counted) tally.words += count_words(messages[tally.counted].content);
  std::int64_t words = tally.words;
  for (std::size_t i = stable; i < messages.size(); ++i) words += count_words(messages[i].content);
  return words;
}

// (The steps below take the run_context and options by reference: mock_agent::run's
// frame owns both and awaits each step at once.)

// The options' tool calls, one after another; false when the run should stop here.
// Calls of tools the run's client declared (docs/frontends.md, "Front-end tools") are
// handed to the client after the built-in ones ran, and the run ends there.
net::awaitable<bool> call_tools(run_context& ctx, const mock_options& options) {
  std::vector<run_context::tool_request> calls;
  std::vector<run_context::tool_request> client_calls;
  for (std::size_t i = 0; i < options.tool_calls.size(); ++i) {
    run_context::tool_request call{"call_" + std::to_string(i + 1), options.tool_calls[i].name, options.tool_calls[i].args};
    (find_client_tool(ctx.client_tools(), call.name) ? client_calls : calls).push_back(std::move(call));
  }
  if (!client_calls.empty()) {
    if (!calls.empty()) {
      auto running = ctx.call_tools(calls);
      co_await std::move(running);
      if (ctx.aborted()) co_return false;
    }
    auto handing = ctx.hand_to_client(client_calls);
    co_await std::move(handing);
    co_return false;
  }
  auto calling = ctx.call_tools(calls);
  auto outcomes = co_await std::move(calling);
  for (const auto& o : outcomes) {
    if (o.status == tool_outcome::kind::ok) continue;
    const char* code = o.status == tool_outcome::kind::timed_out      ? "tool_timeout"
                       : o.status == tool_outcome::kind::unknown_tool ? "unknown_tool"
                                                                      : "tool_failed";
    ctx.fail(code, o.result.output);
    co_return false;
  }
  if (ctx.aborted()) co_return false;
  if (ctx.pace_due()) co_await ctx.pace();
  ctx.publish_status("thinking");
  co_return true;
}

// The turn's user messages (those after the newest assistant-side message; several
// when queued messages are answered together, docs/timeline.md): what the mock echoes
// back word by word, one message after the other.
std::string last_prompt(const run_context& ctx) {
  const auto& messages = ctx.conversation().messages;
  auto first = messages.size();
  while (first > 0 && messages[first - 1].role == "user") --first;
  if (first == messages.size()) {
    for (auto it = messages.rbegin(); it != messages.rend(); ++it)
      if (it->role == "user") return it->content;
    return {};
  }
  std::string prompt;
  for (auto i = first; i < messages.size(); ++i) {
    if (!prompt.empty()) prompt += '\n';
    prompt += messages[i].content;
  }
  return prompt;
}

// Streams the tokens on their schedule; false when the run was aborted meanwhile.
net::awaitable<bool> stream_tokens(run_context& ctx, const mock_options& options) {
  const auto tokens =
      mock_tokens(options.echo_variables ? variables_prompt(ctx.session().variables) : last_prompt(ctx), options.tokens);
  const auto first_token_at = ctx.time().steady_now();
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (ctx.aborted()) co_return false;
    if (options.fail_after && static_cast<std::int64_t>(i) == *options.fail_after) break;
    if (options.tokens_per_second && i > 0) {
      // An absolute schedule: token i is due i/rate after the first, so delays never accumulate.
      auto due = first_token_at + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(static_cast<double>(i) / *options.tokens_per_second));
      auto sleeping = ctx.sleep_until(due);
      if (!co_await std::move(sleeping)) co_return false;
    }
    if (ctx.pace_due()) co_await ctx.pace();
    ctx.publish_token(tokens[i]);
  }
  co_return true;
}

// One step_complete per plan step, after the answer.
net::awaitable<void> complete_plan(run_context& ctx, const mock_options& options) {
  for (std::size_t i = 0; i < options.plan.size(); ++i) {
    if (ctx.aborted()) co_return;
    if (ctx.pace_due()) co_await ctx.pace();
    ctx.publish(event_type::step_complete, {{"step_number", static_cast<std::int64_t>(i + 1)},
                                            {"total_steps", static_cast<std::int64_t>(options.plan.size())},
                                            {"description", options.plan[i]}});
  }
}

}  // namespace

net::awaitable<void> mock_agent::run(run_context& ctx) {
  const auto options = parse_mock_options(ctx.config().if_contains("mock"));
  auto& usage = ctx.usage();
  usage.provider = "mock";
  usage.estimated_cost = 0.0;  // the mock costs nothing: a known price
  usage.model = ctx.config().contains("model") && ctx.config().at("model").is_string()
                    ? std::string(ctx.config().at("model").get_string())
                    : "mock";
  usage.input_tokens = count_words(ctx.conversation());

  if (!options.plan.empty()) {
    boost::json::array todos;
    for (const auto& step : options.plan) todos.push_back(boost::json::string(step));
    if (ctx.pace_due()) co_await ctx.pace();
    ctx.publish(event_type::planning, {{"todos", std::move(todos)}});
  }

  // The run's clock: tests advance it by hand instead of sleeping through think time and pacing.
  // Thinking comes first, as a model thinks before it calls tools.
  const auto start = ctx.time().steady_now();
  if (options.think_ms > 0) {
    auto sleeping = ctx.sleep_until(start + std::chrono::milliseconds(options.think_ms));
    if (!co_await std::move(sleeping)) co_return;
  }

  // A run that starts from the client's tool results answers them: the tools were called.
  const auto& messages = ctx.conversation().messages;
  const bool continuing = !messages.empty() && messages.back().role == "tool";
  if (!options.tool_calls.empty() && !continuing) {
    auto calling = call_tools(ctx, options);
    if (!co_await std::move(calling)) co_return;
  }

  auto streaming = stream_tokens(ctx, options);
  if (!co_await std::move(streaming)) co_return;
  usage.output_tokens = ctx.tokens_streamed();
  if (options.fail_after) {
    ctx.fail("mock_failure", "mock agent failed after " + std::to_string(*options.fail_after) + " tokens");
    co_return;
  }
  auto completing = complete_plan(ctx, options);
  co_await std::move(completing);
}

}  // namespace agw::core
