#include "core/runs/run_driver.hpp"

#include <doctest/doctest.h>

#include "core/clock.hpp"

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/agents/mock_agent.hpp"
#include "core/checkpoint.hpp"
#include "core/events/log_codec.hpp"
#include "core/ids.hpp"
#include "core/projection.hpp"
#include "core/runs/run.hpp"
#include "core/runs/run_context.hpp"
#include "core/runs/session_channel.hpp"
#include "core/time_format.hpp"
#include "core/tools/tool_registry.hpp"
#include "core/tools/tool_runner.hpp"
#include "tests/support/fake_event_writer.hpp"
#include "tests/support/fake_store.hpp"

namespace {

// Real time: only the pace() case sleeps on it (up to a millisecond a sleep).
const agw::core::real_clock wall_clock;

namespace net = boost::asio;
using namespace std::chrono_literals;
using agw::core::event_type;
using agw::core::frame_ptr;

// Records every committed frame the channel hands it; `on_frame` sees each one (on the strand).
class recorder final : public agw::core::subscriber {
 public:
  void deliver(const agw::core::frame_batch& frames) override {
    for (const auto& f : frames->frames) {
      seen.push_back(f);
      if (on_frame) on_frame(*f);
    }
  }
  void close(close_reason why) override { closed.push_back(why); }

  std::vector<frame_ptr> seen;
  std::vector<close_reason> closed;
  std::function<void(const agw::core::event_frame&)> on_frame;
};

boost::json::object data_of(const frame_ptr& f) { return boost::json::parse(f->data()).as_object(); }

std::string str(const boost::json::value& v) { return std::string(v.as_string()); }

// One session's channel over the fake store; the test drives the io_context.
// start() sets a run up the way run_service does (the user message's checkpoint,
// the live run reserved) and spawns drive_run on the channel's strand.
struct driver_fixture {
  explicit driver_fixture(std::int64_t last_event_id = 0, agw::core::session_channel::options opts = {}) {
    session.id = "s1";
    session.thread_id = "thread-s1";
    session.created_at_ms = session.updated_at_ms = agw::core::now_ms();
    session.last_event_id = last_event_id;
    db.seed([this](agw::test::fake_data& d) { d.sessions[session.id] = session; });
    channel = std::make_shared<agw::core::session_channel>(io.get_executor(), session.id, last_event_id, services, opts);
  }
  ~driver_fixture() {
    settle();
    channel.reset();
    store.stop();
  }

  // What start() does, in two steps: prepare() stores the user message's checkpoint and
  // reserves the run; launch() spawns drive_run.
  struct prepared {
    std::shared_ptr<agw::core::run> r;
    agw::core::run_request request;
    std::shared_ptr<agw::core::agent> agent_impl;
  };
  prepared prepare(const std::string& config, const std::string& content, std::optional<std::string> callback_url = std::nullopt,
                   std::shared_ptr<agw::core::agent> agent_impl = nullptr) {
    session.config = boost::json::parse(config).as_object();
    auto seeding = db.connect();
    agw::core::conversation_state conversation;
    std::int64_t version = 0;
    if (auto cp = seeding->latest_checkpoint(session.thread_id)) {
      conversation = agw::core::parse_checkpoint(cp->state, session.id);
      version = cp->version;
    }
    agw::core::message_record user;
    user.id = agw::core::new_uuid();
    user.session_id = session.id;
    user.role = "user";
    user.content = content;
    user.created_at_ms = agw::core::now_ms();
    conversation.messages.push_back(user);
    conversation.messages.back().seq = static_cast<std::int64_t>(conversation.messages.size());
    user_message_id = user.id;
    // The io_context is idle here: touching the channel from the test thread is touching it on its strand.
    auto r = std::make_shared<agw::core::run>(channel->strand(), wall_clock, agw::core::new_uuid(), agw::core::now_ms(),
                                              channel->last_assigned_id());
    conversation.run = agw::core::checkpoint_run{r->id(),      "running",          user.id,     r->started_at_ms(),
                                                 std::nullopt, r->events_before(), callback_url};
    agw::core::save_checkpoint(*seeding, wall_clock, session, ++version, conversation, conversation.messages.size() - 1);
    channel->set_live_run(r);
    if (!agent_impl) agent_impl = std::make_shared<agw::core::mock_agent>();
    agw::core::run_request request{session, conversation, version, callback_url, [this] { ++outbox_written; }};
    return {r, std::move(request), std::move(agent_impl)};
  }
  std::shared_ptr<agw::core::run> launch(prepared p) {
    driver_done = false;
    auto driving = agw::core::drive_run(channel, p.r, std::move(p.request), std::move(p.agent_impl), runner, stats);
    net::co_spawn(channel->strand(), std::move(driving), [this](std::exception_ptr e) {
      driver_error = e;
      driver_done = true;
    });
    return p.r;
  }
  std::shared_ptr<agw::core::run> start(const std::string& config, const std::string& content,
                                        std::optional<std::string> callback_url = std::nullopt,
                                        std::shared_ptr<agw::core::agent> agent_impl = nullptr) {
    return launch(prepare(config, content, std::move(callback_url), std::move(agent_impl)));
  }
  // A run whose final checkpoint's commit fails: the writer is held in a first commit (a
  // job of our own) while the run streams, so the run's first event batch and its final
  // checkpoint queue behind it and share the writer's second commit, which fails.
  std::shared_ptr<agw::core::run> start_with_failing_end(const std::string& config, std::optional<std::string> callback_url) {
    auto p = prepare(config, "x", std::move(callback_url));  // stored before the writer's batch begins
    db.hold_commits();
    auto nothing = [](agw::core::store_connection&) {};
    store.async_write(std::move(nothing), net::bind_executor(io.get_executor(), [](std::exception_ptr) {}));
    for (int i = 0; i < 500 && db.commits_waiting.load() != 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(db.commits_waiting.load() == 1);
    auto r = launch(std::move(p));
    poll();  // the run streams everything and waits for its final checkpoint
    REQUIRE_FALSE(driver_done);
    db.fail_commit_number(2);
    db.release_commits();
    settle();  // the event batch is retried after a pause; the checkpoint is not
    REQUIRE(driver_done);
    return r;
  }
  std::shared_ptr<recorder> subscribe() {
    auto rec = std::make_shared<recorder>();
    channel->subscribe(rec, channel->last_committed_id());
    return rec;
  }
  void settle() {
    io.restart();
    io.run();
  }
  // Runs what is ready now, without waiting for the store.
  void poll() {
    io.restart();
    io.poll();
  }

  // The session's committed log, in id order.
  std::vector<frame_ptr> events() const {
    std::vector<frame_ptr> out;
    const auto data = db.committed();
    if (auto it = data.event_batches.find(session.id); it != data.event_batches.end())
      for (const auto& b : it->second)
        for (auto& f : agw::core::decode_log_frames(b.frames, b.first_id)) out.push_back(std::move(f));
    std::sort(out.begin(), out.end(), [](const frame_ptr& a, const frame_ptr& b) { return a->id < b->id; });
    return out;
  }
  std::vector<frame_ptr> events_of(const std::shared_ptr<agw::core::run>& r) const {
    std::vector<frame_ptr> out;
    for (auto& f : events())
      if (f->run_id() == r->id()) out.push_back(f);
    return out;
  }
  agw::core::checkpoint_record latest_checkpoint() const {
    auto c = const_cast<agw::test::fake_db&>(db).connect();
    auto cp = c->latest_checkpoint(session.thread_id);
    REQUIRE(cp);
    return *cp;
  }
  agw::core::conversation_state final_state() const { return agw::core::parse_checkpoint(latest_checkpoint().state, session.id); }

  agw::test::fake_db db;
  net::io_context io;
  agw::core::metrics stats;
  agw::core::tool_registry tools = agw::core::make_builtin_tools();
  agw::core::tool_runner runner{tools, 1, std::chrono::seconds(5)};
  agw::core::store_executor store{db.factory(), {.readers = 1}};
  agw::test::fake_event_writer writer{store};
  agw::core::channel_services services{store, writer, stats};
  agw::core::session_record session;
  std::shared_ptr<agw::core::session_channel> channel;
  std::string user_message_id;
  int outbox_written = 0;
  bool driver_done = false;
  std::exception_ptr driver_error;
};

std::vector<event_type> types_of(const std::vector<frame_ptr>& frames) {
  std::vector<event_type> out;
  for (const auto& f : frames) out.push_back(f->type);
  return out;
}

std::vector<std::int64_t> ids_of(const std::vector<frame_ptr>& frames) {
  std::vector<std::int64_t> out;
  for (const auto& f : frames) out.push_back(f->id);
  return out;
}

std::vector<std::int64_t> range(std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = first; i <= last; ++i) out.push_back(i);
  return out;
}

std::string streamed_content(const std::vector<frame_ptr>& frames) {
  std::string out;
  for (const auto& f : frames)
    if (f->type == event_type::token) out += str(data_of(f).at("content"));
  return out;
}

// An agent that streams one token and then throws.
class throwing_agent final : public agw::core::agent {
 public:
  net::awaitable<void> run(agw::core::run_context& ctx) override {
    co_await ctx.pace();
    ctx.publish_token("partial");
    throw std::runtime_error("boom");
  }
};

// Publishes `count` tokens, each after pacing (and, when `sleeping`, after a sleep due now,
// which the timer's millisecond grain may stretch to 1 ms), and records how many turns a
// rival on the same io_context had: after each sleep and after each pacing. Paces as agents
// do (`if (ctx.pace_due()) co_await ctx.pace();`) when `asking`, else awaits pace() every
// time; with `pairs`, publishes a reasoning event (through publish()) before each token,
// after the same pacing. The rival stops once the last token is published.
class turn_counting_agent final : public agw::core::agent {
 public:
  turn_counting_agent(const int& rival_turns, bool& done, int count, bool sleeping, bool asking, bool pairs = false)
      : rival_turns_(rival_turns), done_(done), count_(count), sleeping_(sleeping), asking_(asking), pairs_(pairs) {}
  net::awaitable<void> run(agw::core::run_context& ctx) override {
    for (int i = 0; i < count_; ++i) {
      if (sleeping_) {
        auto sleeping = ctx.sleep_until(ctx.time().steady_now());
        co_await std::move(sleeping);
      }
      after_sleep.push_back(rival_turns_);
      if (!asking_ || ctx.pace_due()) co_await ctx.pace();
      after_pace.push_back(rival_turns_);
      if (pairs_) {
        const boost::json::object reasoning{{"content", "r"}};
        ctx.publish(event_type::reasoning, reasoning);
      }
      ctx.publish_token("t");
    }
    done_ = true;
  }
  std::vector<int> after_sleep, after_pace;

 private:
  const int& rival_turns_;
  bool& done_;
  int count_;
  bool sleeping_;
  bool asking_;
  bool pairs_;
};

// The pacings (by index) inside which the rival had a turn.
std::vector<int> turns_inside_pacing(const turn_counting_agent& agent) {
  std::vector<int> inside;
  for (std::size_t i = 0; i < agent.after_pace.size(); ++i)
    if (agent.after_pace[i] != agent.after_sleep[i]) inside.push_back(static_cast<int>(i));
  return inside;
}

// Takes a turn each time it runs and queues itself again, until `stop`.
void take_turns(net::io_context& io, int& turns, const bool& stop) {
  if (stop) return;
  ++turns;
  net::post(io, [&io, &turns, &stop] { take_turns(io, turns, stop); });
}

}  // namespace

template <>
struct doctest::StringMaker<std::vector<std::int64_t>> {
  static doctest::String convert(const std::vector<std::int64_t>& ids) {
    std::string out = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
    return (out + "]").c_str();
  }
};

TEST_CASE("run_driver: a completed run is status thinking, its tokens, usage and done, with consecutive ids") {
  driver_fixture f(7);
  auto r = f.start(R"({"model": "m-1"})", "hello brave new world");
  f.settle();
  REQUIRE(f.driver_done);
  CHECK_FALSE(f.driver_error);

  const auto ev = f.events();
  REQUIRE(ev.size() == 7);
  CHECK(ids_of(ev) == range(8, 14));  // after the channel's last id
  CHECK(types_of(ev) == std::vector<event_type>{event_type::status, event_type::token, event_type::token, event_type::token,
                                                event_type::token, event_type::usage, event_type::done});
  for (const auto& e : ev) CHECK(e->run_id() == r->id());
  CHECK(str(data_of(ev[0]).at("status")) == "thinking");
  CHECK(str(data_of(ev[1]).at("content")) == "hello");
  CHECK(str(data_of(ev[2]).at("content")) == " brave");
  CHECK(str(data_of(ev[4]).at("content")) == " world");

  const auto usage = data_of(ev[5]);
  CHECK(usage.at("input_tokens").as_int64() == 4);  // the conversation's words
  CHECK(usage.at("output_tokens").as_int64() == 4);
  CHECK(usage.at("estimated_cost").as_int64() == 0);  // whole amounts print as integers
  CHECK(str(usage.at("provider")) == "mock");
  CHECK(str(usage.at("model")) == "m-1");

  // done carries the persisted assistant message: the exact concatenation of the tokens.
  const auto answer = data_of(ev[6]).at("assistant_data").as_object();
  CHECK(str(answer.at("content")) == "hello brave new world");
  CHECK(str(answer.at("content")) == streamed_content(ev));
  CHECK(str(answer.at("status")) == "complete");
  CHECK(str(answer.at("role")) == "assistant");
  CHECK(str(answer.at("session_id")) == "s1");
  CHECK(str(answer.at("parent_id")) == f.user_message_id);
  CHECK(answer.at("token_count").as_int64() == 4);
  CHECK(str(answer.at("model_used")) == "m-1");

  // The final checkpoint (version 2: the user message's was 1) holds that message and the run's end.
  CHECK(f.latest_checkpoint().version == 2);
  const auto state = f.final_state();
  REQUIRE(state.messages.size() == 2);
  const auto& saved = state.messages.back();
  CHECK(saved.id == str(answer.at("id")));
  CHECK(saved.content == "hello brave new world");
  CHECK(saved.status == "complete");
  CHECK(saved.token_count == 4);
  REQUIRE(state.run);
  CHECK(state.run->id == r->id());
  CHECK(state.run->state == "completed");
  CHECK(state.run->ended_at_ms == saved.created_at_ms);
  // ... and its projection.
  const auto rows = f.db.committed().messages;
  REQUIRE(rows.count(saved.id) == 1);
  CHECK(rows.at(saved.id).seq == 2);
  CHECK(rows.at(saved.id).content == "hello brave new world");

  CHECK(f.channel->live_run() == nullptr);
  CHECK_FALSE(f.channel->snapshot().run);
  CHECK(f.channel->snapshot().last_event_id == 14);
  CHECK(f.db.committed().deliveries.empty());
  CHECK(f.outbox_written == 0);
}

TEST_CASE("run_driver: tool calls publish tool_call and tool_result and checkpoint the tool messages") {
  driver_fixture f;
  auto r =
      f.start(R"({"mock": {"tokens": 2, "tool_calls": [{"name": "calculator", "args": {"expression": "2+3"}}]}})", "add them");
  f.settle();
  REQUIRE(f.driver_done);

  const auto ev = f.events();
  CHECK(ids_of(ev) == range(1, static_cast<std::int64_t>(ev.size())));
  REQUIRE(types_of(ev) == std::vector<event_type>{event_type::status, event_type::status, event_type::tool_call,
                                                  event_type::tool_result, event_type::status, event_type::token,
                                                  event_type::token, event_type::usage, event_type::done});
  CHECK(str(data_of(ev[0]).at("status")) == "thinking");
  CHECK(str(data_of(ev[1]).at("status")) == "tool");
  const auto call = data_of(ev[2]);
  CHECK(str(call.at("id")) == "call_1");
  CHECK(str(call.at("name")) == "calculator");
  CHECK(str(call.at("args").at("expression")) == "2+3");
  const auto result = data_of(ev[3]);
  CHECK(str(result.at("tool_call_id")) == "call_1");
  CHECK(str(result.at("output")) == "5");
  CHECK(result.at("exit_code").as_int64() == 0);
  CHECK(str(data_of(ev[4]).at("status")) == "thinking");
  const auto answer = data_of(ev[8]).at("assistant_data").as_object();
  CHECK(str(answer.at("content")) == "tok0 tok1");
  CHECK(str(answer.at("status")) == "complete");

  // Checkpoints: the user message (1), after the tool step (2), the end (3).
  CHECK(f.latest_checkpoint().version == 3);
  const auto state = f.final_state();
  REQUIRE(state.messages.size() == 4);
  const auto& asked = state.messages[1];
  CHECK(asked.role == "assistant");
  CHECK(asked.content.empty());
  CHECK(asked.parent_id == f.user_message_id);
  REQUIRE(asked.tool_calls.size() == 1);
  CHECK(str(asked.tool_calls[0].at("id")) == "call_1");
  CHECK(str(asked.tool_calls[0].at("name")) == "calculator");
  const auto& tool = state.messages[2];
  CHECK(tool.role == "tool");
  CHECK(tool.content == "5");
  CHECK(tool.tool_call_id == "call_1");
  CHECK(tool.parent_id == asked.id);
  CHECK(tool.status == "complete");
  const auto& final_answer = state.messages[3];
  CHECK(final_answer.id == str(answer.at("id")));
  CHECK(final_answer.content == "tok0 tok1");
  CHECK(final_answer.parent_id == f.user_message_id);  // the user message, not the tool step
  CHECK(state.run->state == "completed");
  CHECK(f.db.committed().messages.size() == 4);
  CHECK(f.stats.runs_completed.load() == 1);
}

TEST_CASE("run_driver: an unknown tool fails the run with unknown_tool") {
  driver_fixture f;
  f.start(R"({"mock": {"tool_calls": [{"name": "no_such_tool"}]}})", "x");
  f.settle();
  const auto ev = f.events();
  REQUIRE(ev.size() >= 3);
  CHECK(types_of(ev) == std::vector<event_type>{event_type::status, event_type::status, event_type::tool_call,
                                                event_type::tool_result, event_type::error, event_type::usage, event_type::done});
  CHECK(str(data_of(ev[4]).at("code")) == "unknown_tool");
  CHECK(str(data_of(ev.back()).at("assistant_data").at("status")) == "error");
  CHECK(f.final_state().run->state == "error");
  CHECK(f.stats.runs_failed.load() == 1);
}

TEST_CASE("run_driver: an abort mid-run ends with status aborted and done carrying what was streamed") {
  driver_fixture f;
  // Five seconds between tokens: the abort, sent when the first token is delivered, cuts the wait.
  auto rec = f.subscribe();
  auto r = f.start(R"({"mock": {"tokens": 3, "tokens_per_second": 0.2}})", "x");
  rec->on_frame = [r](const agw::core::event_frame& e) {
    if (e.type == event_type::token) r->request_abort();
  };
  const auto began = std::chrono::steady_clock::now();
  f.settle();
  CHECK(std::chrono::steady_clock::now() - began < 4s);
  REQUIRE(f.driver_done);

  const auto ev = f.events();
  CHECK(ids_of(ev) == range(1, 5));
  REQUIRE(types_of(ev) == std::vector<event_type>{event_type::status, event_type::token, event_type::status, event_type::usage,
                                                  event_type::done});
  CHECK(str(data_of(ev[2]).at("status")) == "aborted");
  CHECK(data_of(ev[3]).at("output_tokens").as_int64() == 1);
  const auto answer = data_of(ev[4]).at("assistant_data").as_object();
  CHECK(str(answer.at("status")) == "aborted");
  CHECK(str(answer.at("content")) == "tok0");
  CHECK(answer.at("token_count").as_int64() == 1);
  // Subscribers got the same events, the done last.
  CHECK(ids_of(rec->seen) == ids_of(ev));

  const auto state = f.final_state();
  CHECK(state.messages.back().status == "aborted");
  CHECK(state.messages.back().content == "tok0");
  CHECK(state.run->state == "aborted");
  CHECK(f.stats.runs_aborted.load() == 1);
  CHECK(f.stats.runs_live.load() == 0);
  // Too late: the run's end is decided.
  CHECK_FALSE(r->request_abort());
}

TEST_CASE("run_driver: an abort while thinking ends with empty content") {
  driver_fixture f;
  auto r = f.start(R"({"mock": {"think_ms": 60000}})", "x");
  f.poll();
  CHECK(f.stats.runs_live.load() == 1);
  CHECK_FALSE(f.driver_done);
  CHECK(r->request_abort());
  f.settle();
  REQUIRE(f.driver_done);
  const auto ev = f.events();
  REQUIRE(types_of(ev) == std::vector<event_type>{event_type::status, event_type::status, event_type::usage, event_type::done});
  const auto answer = data_of(ev[3]).at("assistant_data").as_object();
  CHECK(str(answer.at("status")) == "aborted");
  CHECK(str(answer.at("content")).empty());
  CHECK(answer.at("token_count").as_int64() == 0);
  CHECK(f.stats.runs_live.load() == 0);
}

TEST_CASE("run_driver: an agent failure (mock fail_after) is an error event, then done with status error") {
  driver_fixture f;
  auto r = f.start(R"({"mock": {"tokens": 5, "fail_after": 2}})", "x");
  f.settle();
  const auto ev = f.events();
  CHECK(ids_of(ev) == range(1, 6));
  REQUIRE(types_of(ev) == std::vector<event_type>{event_type::status, event_type::token, event_type::token, event_type::error,
                                                  event_type::usage, event_type::done});
  const auto error = data_of(ev[3]);
  CHECK(str(error.at("run_id")) == r->id());
  CHECK(str(error.at("code")) == "mock_failure");
  CHECK(str(error.at("message")) == "mock agent failed after 2 tokens");
  const auto answer = data_of(ev[5]).at("assistant_data").as_object();
  CHECK(str(answer.at("status")) == "error");
  CHECK(str(answer.at("content")) == "tok0 tok1");
  const auto state = f.final_state();
  CHECK(state.messages.back().status == "error");
  CHECK(state.messages.back().content == "tok0 tok1");
  CHECK(state.run->state == "error");
  CHECK(f.stats.runs_failed.load() == 1);
  CHECK(f.stats.runs_completed.load() == 0);
}

TEST_CASE("run_driver: an agent that throws fails the run with agent_error and its message") {
  driver_fixture f;
  f.start("{}", "x", std::nullopt, std::make_shared<throwing_agent>());
  f.settle();
  REQUIRE(f.driver_done);
  CHECK_FALSE(f.driver_error);  // drive_run never throws
  const auto ev = f.events();
  REQUIRE(types_of(ev) ==
          std::vector<event_type>{event_type::status, event_type::token, event_type::error, event_type::usage, event_type::done});
  CHECK(str(data_of(ev[2]).at("code")) == "agent_error");
  CHECK(str(data_of(ev[2]).at("message")) == "boom");
  const auto answer = data_of(ev[4]).at("assistant_data").as_object();
  CHECK(str(answer.at("status")) == "error");
  CHECK(str(answer.at("content")) == "partial");
  CHECK(f.stats.runs_failed.load() == 1);
}

TEST_CASE("run_driver: when the final checkpoint cannot be stored, error storage_error then done, and the session stays usable") {
  driver_fixture f;
  auto r = f.start_with_failing_end(R"({"mock": {"tokens": 3}})", "https://example.com/hook");
  CHECK(f.db.failed_commits.load() == 1);

  const auto ev = f.events();
  CHECK(ids_of(ev) == range(1, 7));
  REQUIRE(types_of(ev) == std::vector<event_type>{event_type::status, event_type::token, event_type::token, event_type::token,
                                                  event_type::usage, event_type::error, event_type::done});
  CHECK(str(data_of(ev[5]).at("code")) == "storage_error");
  CHECK(str(data_of(ev[5]).at("message")) == "the run's end could not be persisted");
  const auto answer = data_of(ev[6]).at("assistant_data").as_object();
  CHECK(str(answer.at("status")) == "error");
  CHECK(str(answer.at("content")) == "tok0 tok1 tok2");
  CHECK(answer.at("token_count").as_int64() == 3);
  // Nothing of the end was stored: the checkpoint is the user message's, no outbox row.
  CHECK(f.latest_checkpoint().version == 1);
  CHECK(f.final_state().run->state == "running");
  CHECK(f.db.committed().deliveries.empty());
  CHECK(f.outbox_written == 0);
  // Counted as failed: its done says error.
  CHECK(f.stats.runs_completed.load() == 0);
  CHECK(f.stats.runs_failed.load() == 1);
  CHECK(f.stats.runs_live.load() == 0);

  // The live run is cleared: the session takes its next run, whose ids follow on.
  CHECK(f.channel->live_run() == nullptr);
  auto next = f.start(R"({"mock": {"tokens": 1}})", "again");
  f.settle();
  const auto next_events = f.events_of(next);
  REQUIRE_FALSE(next_events.empty());
  CHECK(next_events.front()->id == 8);
  CHECK(str(data_of(next_events.back()).at("assistant_data").at("status")) == "complete");
  CHECK(f.final_state().run->id == next->id());
  CHECK(f.stats.runs_completed.load() == 1);
  CHECK(f.stats.runs_live.load() == 0);
}

// drive_run counts a run by the status its done carries: an end that could not be stored
// (done says "error") is a failed run, not a completed one.
TEST_CASE("run_driver: a run whose end could not be stored counts as failed") {
  driver_fixture f;
  f.start_with_failing_end(R"({"mock": {"tokens": 1}})", std::nullopt);
  CHECK(f.stats.runs_failed.load() == 1);
  CHECK(f.stats.runs_completed.load() == 0);
}

TEST_CASE("run_driver: a callback_url puts the outbox row in the final checkpoint's transaction") {
  driver_fixture f;
  auto r = f.start(R"({"mock": {"tokens": 2}})", "x", "https://example.com/hook");
  f.settle();
  const auto ev = f.events();
  const auto answer = data_of(ev.back()).at("assistant_data").as_object();

  const auto deliveries = f.db.committed().deliveries;
  REQUIRE(deliveries.size() == 1);
  const auto& d = deliveries.front();
  CHECK(d.session_id == "s1");
  CHECK(d.run_id == r->id());
  CHECK(d.url == "https://example.com/hook");
  CHECK(d.status == "pending");
  const auto payload = boost::json::parse(d.payload).as_object();
  CHECK(str(payload.at("status")) == "done");
  CHECK(str(payload.at("message_id")) == str(answer.at("id")));
  CHECK(str(payload.at("output")) == "tok0 tok1");
  CHECK(payload.at("token_usage").at("output").as_int64() == 2);
  CHECK(f.outbox_written == 1);

  // One write job (one savepoint) holds the final checkpoint and the outbox row.
  const auto calls = f.db.calls();
  auto is_outbox_row = [](const std::string& c) { return c.ends_with(":insert_webhook_delivery"); };
  const auto row = std::find_if(calls.rbegin(), calls.rend(), is_outbox_row);
  REQUIRE(row != calls.rend());
  bool checkpoint_in_same_job = false;
  for (auto it = row + 1; it != calls.rend(); ++it) {
    if (it->ends_with(":append_checkpoint")) {
      checkpoint_in_same_job = true;
      break;
    }
    if (it->ends_with(":savepoint") || it->ends_with(":release") || it->ends_with(":commit")) break;
  }
  CHECK(checkpoint_in_same_job);
}

TEST_CASE("run_driver: metrics count started, completed, aborted and failed runs; runs_live goes back to 0") {
  driver_fixture f;
  f.start(R"({"mock": {"tokens": 1}})", "one");
  f.settle();
  CHECK(f.stats.runs_started.load() == 1);
  CHECK(f.stats.runs_completed.load() == 1);
  CHECK(f.stats.runs_live.load() == 0);

  auto slow = f.start(R"({"mock": {"think_ms": 60000}})", "two");
  f.poll();
  CHECK(f.stats.runs_started.load() == 2);
  CHECK(f.stats.runs_live.load() == 1);
  slow->request_abort();
  f.settle();
  CHECK(f.stats.runs_aborted.load() == 1);
  CHECK(f.stats.runs_live.load() == 0);

  f.start(R"({"mock": {"tokens": 2, "fail_after": 1}})", "three");
  f.settle();
  CHECK(f.stats.runs_started.load() == 3);
  CHECK(f.stats.runs_completed.load() == 1);
  CHECK(f.stats.runs_aborted.load() == 1);
  CHECK(f.stats.runs_failed.load() == 1);
  CHECK(f.stats.runs_live.load() == 0);
  CHECK(f.channel->live_run() == nullptr);
  // Every event of the three runs, one sequence.
  const auto ev = f.events();
  CHECK(ids_of(ev) == range(1, static_cast<std::int64_t>(ev.size())));
}

TEST_CASE("run_driver: the conversation a run hands on is exactly the one its final checkpoint stored") {
  driver_fixture f;
  auto p =
      f.prepare(R"({"mock": {"tokens": 2, "tool_calls": [{"name": "calculator", "args": {"expression": "2+3"}}]}})", "add them");
  std::optional<std::pair<agw::core::conversation_state, std::int64_t>> kept;
  p.request.conversation_saved = [&](agw::core::conversation_state state, std::int64_t version) {
    kept.emplace(std::move(state), version);
  };
  f.launch(std::move(p));
  f.settle();
  REQUIRE(kept);
  auto c = f.db.connect();
  const auto stored = c->latest_conversation(f.session.thread_id);
  REQUIRE(stored);
  CHECK(kept->second == stored->version);
  CHECK(kept->second == 3);  // the user message, the tool step, the end
  CHECK(agw::core::serialize_checkpoint(kept->first) == agw::core::serialize_checkpoint(stored->state));
  REQUIRE(kept->first.messages.size() == 4);
  for (std::size_t i = 0; i < kept->first.messages.size(); ++i) {
    CAPTURE(i);
    CHECK(kept->first.messages[i].seq == static_cast<std::int64_t>(i + 1));
    CHECK(kept->first.messages[i].session_id == "s1");
  }
}

TEST_CASE(
    "run_driver: pacing (asked first with pace_due(), or not) lets the io thread go every 8 events of a run that never waits, "
    "and not after a sleep") {
  for (const bool sleeping : {false, true})
    for (const bool asking : {true, false}) {
      CAPTURE(sleeping);
      CAPTURE(asking);
      driver_fixture f;
      int rival_turns = 0;
      bool agent_done = false;
      auto agent_impl = std::make_shared<turn_counting_agent>(rival_turns, agent_done, 32, sleeping, asking);
      f.start("{}", "x", std::nullopt, agent_impl);
      net::post(f.io, [&] { take_turns(f.io, rival_turns, agent_done); });
      f.settle();
      REQUIRE(f.driver_done);
      const auto& before = agent_impl->after_sleep;
      REQUIRE(agent_impl->after_pace.size() == 32);
      const auto inside = turns_inside_pacing(*agent_impl);
      if (!sleeping) {
        // Storage keeps up (far below the watermark): pacing gives a turn before every 8th
        // event published (the driver's status, then tokens 0-6: a turn before token 7).
        CHECK(inside == std::vector<int>{7, 15, 23, 31});
      } else {
        // Each sleep gave the thread up already: pacing gives none.
        CHECK(inside.empty());
        CHECK(before.back() > before.front());  // the rival did run, during the sleeps
      }
    }
}

TEST_CASE("run_driver: the yield counts the events published, through every publish call, not the pacings") {
  for (const bool asking : {true, false}) {
    CAPTURE(asking);
    driver_fixture f;
    int rival_turns = 0;
    bool agent_done = false;
    auto agent_impl = std::make_shared<turn_counting_agent>(rival_turns, agent_done, 32, false, asking, /*pairs=*/true);
    f.start("{}", "x", std::nullopt, agent_impl);
    net::post(f.io, [&] { take_turns(f.io, rival_turns, agent_done); });
    f.settle();
    REQUIRE(f.driver_done);
    REQUIRE(agent_impl->after_pace.size() == 32);
    // The driver's status, then two events a pacing: 1 + 2 x 4 = 9 events before pacing 4
    // (8 or more: a turn), then 8 before each 4th pacing after. Counting pacings would give
    // 7, 15, ...; counting only tokens, 7, 15, ... too.
    CHECK(turns_inside_pacing(*agent_impl) == std::vector<int>{4, 8, 12, 16, 20, 24, 28});
  }
}

TEST_CASE("run_driver: a run whose events wait for their commit stops at the high watermark, and goes on once they commit") {
  driver_fixture f(0, {.high_watermark = 4});
  f.db.hold_commits();
  f.start(R"({"mock": {"tokens": 20}})", "x");
  for (int i = 0; i < 20; ++i) f.poll();  // the run publishes until 4 events await their commit
  // The io_context is idle between polls: reading the channel here is reading it on its strand.
  // The driver's status and tokens 0-2: the run asks before token 3 and waits there.
  CHECK(f.channel->last_assigned_id() == 4);
  CHECK_FALSE(f.driver_done);
  f.db.release_commits();
  f.settle();
  REQUIRE(f.driver_done);
  CHECK(f.events().size() == 23);  // status, 20 tokens, usage, done
}
