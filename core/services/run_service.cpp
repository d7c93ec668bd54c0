#include "core/services/run_service.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/api_error.hpp"
#include "core/checkpoint.hpp"
#include "core/clock.hpp"
#include "core/content_hash.hpp"
#include "core/ids.hpp"
#include "core/projection.hpp"
#include "core/runs/run.hpp"
#include "core/runs/run_driver.hpp"
#include "core/runs/session_channel.hpp"
#include "core/services/session_service.hpp"
#include "core/session_hub.hpp"
#include "core/store_executor.hpp"

namespace agw::core {

namespace net = boost::asio;

// What the user message's write job returns.
struct run_service::started_run {
  conversation_state conversation;
  std::int64_t checkpoint_version = 0;
  std::optional<idempotency_record> existing_key;  // a concurrent POST won the same key: nothing was stored
};

namespace {

// Result of trying to reserve the session for a new run, on the channel's strand.
struct reservation {
  std::shared_ptr<run> created;  // set when this request owns the new run
  std::string live_run_id;       // set when another run is live
};

// `time` is the process's clock: it outlives every run.
net::awaitable<reservation> reserve(std::shared_ptr<session_channel> channel, const clock& time) {
  auto claim = [channel, &time, started = time.wall_ms()]() -> net::awaitable<reservation> {
    if (auto live = channel->live_run()) co_return reservation{nullptr, live->id()};
    auto r = std::make_shared<run>(channel->strand(), time, new_uuid(), started, channel->last_assigned_id());
    channel->set_live_run(r);
    co_return reservation{r, ""};
  };
  auto claiming = net::co_spawn(channel->strand(), claim(), net::use_awaitable);
  co_return co_await std::move(claiming);
}

// Nothing was stored for this request: give the session back.
net::awaitable<void> release(std::shared_ptr<session_channel> channel, std::shared_ptr<run> r) {
  auto give_back = [channel, r]() -> net::awaitable<void> {
    if (channel->live_run() == r) channel->set_live_run(nullptr);
    co_return;
  };
  auto releasing = net::co_spawn(channel->strand(), give_back(), net::use_awaitable);
  co_await std::move(releasing);
}

// The conversation at the store's newest checkpoint: the cached one while that is still
// its version (no read of the conversation), else the store's.
stored_conversation newest_conversation(store_connection& c, const session_record& session, conversation_cache::entry* cached) {
  if (cached && c.latest_checkpoint_version(session.thread_id) == cached->version)
    return {cached->version, 0, std::move(cached->state)};
  auto cp = c.latest_conversation(session.thread_id);
  return cp ? std::move(*cp) : stored_conversation{};
}

message_record user_message(const session_record& session, const std::string& content, const clock& time) {
  message_record user;
  user.id = new_uuid();
  user.session_id = session.id;
  user.role = "user";
  user.content = content;
  user.created_at_ms = time.wall_ms();
  return user;
}

// The run's input messages: the user message, or the client's tool results.
std::vector<message_record> input_messages(const session_record& session, const start_request& request, const clock& time) {
  if (request.tool_results.empty()) return {user_message(session, request.content, time)};
  std::vector<message_record> out;
  for (const auto& r : request.tool_results) {
    auto m = user_message(session, r.content, time);
    m.role = "tool";
    m.tool_call_id = r.tool_call_id;
    out.push_back(std::move(m));
  }
  return out;
}

// What the Idempotency-Key compares: the user message, or the tool results.
std::string input_hash(const start_request& request) {
  if (request.tool_results.empty()) return content_hash(request.content);
  std::string all = "tool-results";
  for (const auto& r : request.tool_results)
    all += "\n" + std::to_string(r.tool_call_id.size()) + ":" + r.tool_call_id + r.content;
  return content_hash(all);
}

// Tool results answer calls of the newest assistant turn that have no result yet.
void check_tool_results(const conversation_state& conversation, const std::vector<client_tool_result>& results) {
  const auto pending = pending_tool_calls(conversation);
  for (const auto& r : results) {
    bool found = false;
    for (const auto& call : pending) found = found || call.at("id") == r.tool_call_id.c_str();
    if (!found)
      throw api_error(error_code::bad_request, "toolCallId " + r.tool_call_id + " is not a pending tool call of this session");
  }
}

}  // namespace

run_service::run_service(store_executor& store, session_hub& hub, session_service& sessions, metrics& stats, const clock& time,
                         std::function<void()> outbox_written)
    : store_(store), hub_(hub), sessions_(sessions), stats_(stats), clock_(time), outbox_written_(std::move(outbox_written)) {}

net::awaitable<run_start> run_service::start(session_record session, start_request request) {
  const std::string hash = input_hash(request);
  if (request.idempotency_key) {
    auto finding = find_key(session.id, *request.idempotency_key);
    auto found = co_await std::move(finding);
    if (found && found->created_at_ms >= clock_.wall_ms() - idempotency_ttl_ms) co_return attach(session, *found, hash);
  }
  auto channel = hub_.channel(session.id, session.last_event_id);
  auto reserving = reserve(channel, clock_);
  auto reserved = co_await std::move(reserving);
  if (!reserved.created) {
    auto resolving = resolve_conflict(session, request, hash, reserved.live_run_id);
    co_return co_await std::move(resolving);
  }
  auto r = reserved.created;
  // Counted from here, not from when the run's coroutine first runs: a burst of POSTs
  // all finding room, or a drain seeing no run while one is being persisted, would
  // slip in between.
  if (!admit_run()) {
    auto releasing = release(channel, r);
    co_await std::move(releasing);
    throw api_error(error_code::unavailable, "too many runs in progress; retry later");
  }
  std::exception_ptr failure;
  try {
    auto persisting = persist_user_message(channel, r, session, request, hash);
    auto started = co_await std::move(persisting);
    if (started.existing_key) {
      stats_.runs_admitted--;
      co_return attach(session, *started.existing_key, hash);
    }
    launch(channel, r, std::move(session), std::move(started), request);
    co_return run_start{channel, r->id(), r->events_before(), false};
  } catch (...) {
    failure = std::current_exception();
  }
  stats_.runs_admitted--;
  std::rethrow_exception(failure);
}

bool run_service::admit_run() {
  const auto before = stats_.runs_admitted.fetch_add(1);
  if (max_runs_ == 0 || before < static_cast<std::int64_t>(max_runs_)) return true;
  stats_.runs_admitted--;
  return false;
}

net::awaitable<std::optional<std::string>> run_service::abort(std::string session_id) {
  auto finding = sessions_.require(std::move(session_id));
  auto session = co_await std::move(finding);
  auto channel = hub_.find(session.id);
  if (!channel) co_return std::nullopt;
  auto request_abort = [channel]() -> net::awaitable<std::string> {
    auto live = channel->live_run();
    // A run whose end is already decided is as good as idle.
    if (!live || !live->request_abort()) co_return std::string();
    co_return live->id();
  };
  auto aborting = net::co_spawn(channel->strand(), request_abort(), net::use_awaitable);
  auto run_id = co_await std::move(aborting);
  if (run_id.empty()) co_return std::nullopt;
  co_return run_id;
}

void run_service::abort_all() {
  for (auto& channel : hub_.all_channels())
    net::post(channel->strand(), [channel] {
      if (auto live = channel->live_run()) live->request_abort();
    });
}

net::awaitable<std::optional<idempotency_record>> run_service::find_key(const std::string& session_id, const std::string& key) {
  auto find = [session_id, key](store_connection& c) { return c.find_idempotency_key(session_id, key); };
  co_return co_await store_.async_read(std::move(find), net::use_awaitable);
}

// The key's row, waiting briefly for a concurrent POST's user-message commit to land.
net::awaitable<std::optional<idempotency_record>> run_service::wait_for_key(const std::string& session_id,
                                                                            const std::string& key) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto finding = find_key(session_id, key);
    auto found = co_await std::move(finding);
    if (found) co_return found;
    auto pausing = clock_.sleep_for(std::chrono::milliseconds(10));
    co_await std::move(pausing);
  }
  co_return std::nullopt;
}

net::awaitable<run_start> run_service::resolve_conflict(const session_record& session, const start_request& request,
                                                        const std::string& hash, const std::string& live_run_id) {
  // A retry racing its original (same key, sent before the original's key row
  // committed) attaches to it rather than meeting the 409.
  if (request.idempotency_key) {
    auto waiting = wait_for_key(session.id, *request.idempotency_key);
    auto found = co_await std::move(waiting);
    if (found) co_return attach(session, *found, hash);
  }
  boost::json::object where;
  where["run_id"] = live_run_id;
  where["stream_url"] = "/sessions/" + session.id + "/events";
  throw api_error(error_code::run_in_progress, "a run is already live on this session", std::move(where));
}

// The user message is durable (checkpoint + projection + idempotency key) before any byte of the answer.
net::awaitable<run_service::started_run> run_service::persist_user_message(const std::shared_ptr<session_channel>& channel,
                                                                           const std::shared_ptr<run>& r,
                                                                           const session_record& session,
                                                                           const start_request& request,
                                                                           const std::string& hash) {
  std::shared_ptr<conversation_cache::entry> cached;
  if (auto kept = conversations_->take(session.id)) cached = std::make_shared<conversation_cache::entry>(std::move(*kept));
  auto persist = [session, input = input_messages(session, request, clock_), run_id = r->id(), started = r->started_at_ms(),
                  first = r->events_before(), key = request.idempotency_key, hash, callback_url = request.callback_url,
                  &time = clock_, cached](store_connection& c) {
    started_run out;
    if (key) {
      // Expired keys go first: a key past its TTL starts a new run, it does not attach.
      c.purge_idempotency_keys(time.wall_ms() - idempotency_ttl_ms);
      if (auto existing = c.find_idempotency_key(session.id, *key)) {
        out.existing_key = existing;
        return out;
      }
      c.insert_idempotency_key({session.id, *key, hash, run_id, first, time.wall_ms()});
    }
    auto newest = newest_conversation(c, session, cached.get());
    out.conversation = std::move(newest.state);
    out.checkpoint_version = newest.version;
    if (input.front().role == "tool") {
      std::vector<client_tool_result> results;
      for (const auto& m : input) results.push_back({*m.tool_call_id, m.content});
      check_tool_results(out.conversation, results);
    }
    const auto first_new = out.conversation.messages.size();
    for (const auto& m : input) {
      out.conversation.messages.push_back(m);
      out.conversation.messages.back().seq = static_cast<std::int64_t>(out.conversation.messages.size());
    }
    out.conversation.run = checkpoint_run{run_id, "running", input.back().id, started, std::nullopt, first, callback_url};
    save_checkpoint(c, time, session, ++out.checkpoint_version, out.conversation, first_new);
    return out;
  };
  std::exception_ptr failure;
  started_run started;
  try {
    started = co_await store_.async_write(std::move(persist), net::use_awaitable);
  } catch (...) {
    failure = std::current_exception();
  }
  // Nothing was written for a key another POST holds: the conversation is as it was.
  if (!failure && started.existing_key && cached) conversations_->give_back(session.id, std::move(*cached));
  if (failure || started.existing_key) {
    auto releasing = release(channel, r);
    co_await std::move(releasing);
    if (failure) std::rethrow_exception(failure);
  }
  co_return started;
}

void run_service::launch(const std::shared_ptr<session_channel>& channel, const std::shared_ptr<run>& r, session_record session,
                         started_run started, start_request& start) {
  auto agent_impl = hub_.agent_for(session);
  auto keep = [cache = conversations_, id = session.id](conversation_state state, std::int64_t version) {
    cache->give_back(id, {version, std::move(state)});
  };
  run_request request{std::move(session),
                      std::move(started.conversation),
                      started.checkpoint_version,
                      std::move(start.callback_url),
                      outbox_written_,
                      std::move(keep),
                      std::move(start.request_id),
                      std::move(start.client_tools)};
  auto driver = drive_run(channel, r, std::move(request), std::move(agent_impl), hub_.tools(), stats_);
  // The admission (admit_run) ends with the run.
  net::co_spawn(channel->strand(), std::move(driver), [run_id = r->id(), &stats = stats_](std::exception_ptr e) {
    stats.runs_admitted--;
    if (e) spdlog::error("run {} ended by an unexpected exception", run_id);
  });
}

run_start run_service::attach(const session_record& session, const idempotency_record& key, const std::string& hash) const {
  if (key.content_hash != hash)
    throw api_error(error_code::idempotency_mismatch, "this Idempotency-Key was used with different content");
  return run_start{hub_.channel(session.id, session.last_event_id), key.run_id, key.first_event_id, true};
}

}  // namespace agw::core
