#include "core/services/run_service.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/api_error.hpp"
#include "core/checkpoint.hpp"
#include "core/clock.hpp"
#include "core/content_hash.hpp"
#include "core/ids.hpp"
#include "core/projection.hpp"
#include "core/recovery.hpp"
#include "core/runs/run.hpp"
#include "core/runs/run_driver.hpp"
#include "core/runs/run_reservation.hpp"
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
  std::size_t turn = 0;                            // the turn's user messages: the conversation's last ones
  std::vector<std::string> dequeued;               // ids of the queued messages among them
  std::int64_t taken_up_to = 0;                    // the newest queue seq taken (0: none)
  bool waits_for_client = false;                   // the queue's run: the client owes tool results first
  std::optional<run_lease_record> lease;           // the run's lease, taken in the same job
  std::optional<std::string> refused_by;           // another node's run holds the session: nothing was stored
  std::int64_t log_last = 0;                       // the session's last committed event id (any node's)
  std::int64_t events_before = 0;                  // where the run's events start: after the log's last id
};

// The renewal's timer, cancelled when the run ends (on the channel's strand).
struct run_service::lease_timer {
  explicit lease_timer(const io_strand& strand) : timer(strand) {}
  net::steady_timer timer;
  bool ended = false;
};

namespace {

message_record user_message(const session_record& session, const std::string& content, const clock& time) {
  message_record user;
  user.id = new_uuid();
  user.session_id = session.id;
  user.role = "user";
  user.content = content;
  user.created_at_ms = time.wall_ms();
  user.source = std::string(name_of(event_source::customer));
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

message_record from_queue(const queued_message_record& q) {
  message_record user;
  user.id = q.id;
  user.session_id = q.session_id;
  user.role = "user";
  user.content = q.content;
  user.created_at_ms = q.created_at_ms;
  user.source = q.source;
  return user;
}

api_error conflict(const session_record& session, const std::string& live_run_id) {
  boost::json::object where;
  where["run_id"] = live_run_id;
  where["stream_url"] = "/sessions/" + session.id + "/events";
  return api_error(error_code::run_in_progress, "a run is already live on this session", std::move(where));
}

}  // namespace

run_service::run_service(store_executor& store, session_hub& hub, session_service& sessions, metrics& stats, const clock& time,
                         std::function<void()> outbox_written)
    : store_(store), hub_(hub), sessions_(sessions), stats_(stats), clock_(time), outbox_written_(std::move(outbox_written)) {}

net::awaitable<run_start> run_service::start(session_record session, start_request request) {
  const bool manual = session.mode == "manual";
  if (manual && !request.may_hold)
    throw api_error(error_code::run_in_progress, "the session is in manual mode: post its messages to /sessions/{id}/messages");
  // A held message is stored once, whatever the key: keys name runs (docs/timeline.md).
  if (manual) request.idempotency_key.reset();
  const std::string hash = input_hash(request);
  if (request.idempotency_key) {
    auto finding = find_key(session.id, *request.idempotency_key);
    auto found = co_await std::move(finding);
    if (found && found->created_at_ms >= clock_.wall_ms() - idempotency_ttl_ms) co_return attach(session, *found, hash);
  }
  auto policy = request.policy.value_or(configured_multitask(session.config));
  if (!request.may_hold && policy == multitask::enqueue) policy = multitask::reject;
  // Tool results answer the calls of the run that handed them over: interrupting a run
  // would make another answer the newest turn, and the results no longer fit. A 409.
  if (!request.tool_results.empty() && policy == multitask::interrupt) policy = multitask::reject;
  auto channel = hub_.channel(session);
  std::shared_ptr<run> r;
  // An interrupt waits for the live run to end, then competes for the session again:
  // a few rounds, then the 409 as if it had been rejected.
  for (int round = 0; !r; ++round) {
    auto reserving = reserve(channel, clock_);
    auto reserved = co_await std::move(reserving);
    if (reserved.created) {
      r = reserved.created;
      break;
    }
    // The queue's own run: the live run takes the queue when it ends.
    if (request.content.empty() && request.tool_results.empty()) co_return run_start{channel};
    if (request.idempotency_key || policy == multitask::reject || (policy == multitask::interrupt && round >= 3)) {
      auto resolving = resolve_conflict(session, request, hash, reserved.live_run_id);
      co_return co_await std::move(resolving);
    }
    if (policy == multitask::enqueue) {
      auto queuing = enqueue(channel, session, request);
      auto queued = co_await std::move(queuing);
      if (queued) co_return std::move(*queued);
      continue;  // the live run ended meanwhile: start one
    }
    auto interrupting = interrupt(channel);
    co_await std::move(interrupting);
  }
  // Counted from here, not from when the run's coroutine first runs: a burst of POSTs
  // all finding room, or a drain seeing no run while one is being persisted, would
  // slip in between. (A held message is no run.)
  if (!manual && !admit_run()) {
    auto releasing = release(channel, r);
    co_await std::move(releasing);
    throw api_error(error_code::unavailable, "too many runs in progress; retry later");
  }
  std::exception_ptr failure;
  bool admission_ended = false;  // given back already (a 409 from another node's lease)
  try {
    auto persisting = persist_user_message(channel, r, session, request, hash);
    auto started = co_await std::move(persisting);
    if (started.existing_key) {
      stats_.runs_admitted--;
      co_return attach(session, *started.existing_key, hash);
    }
    if (started.refused_by) {
      // Another node's run holds the session (its lease): as a local live run would, a
      // 409 (a cross-node enqueue or interrupt is not offered), or an Idempotency-Key
      // retry attaches to the run its first attempt started there.
      stats_.runs_admitted--;
      admission_ended = true;
      auto resolving = resolve_conflict(session, request, hash, *started.refused_by);
      co_return co_await std::move(resolving);
    }
    if (started.turn == 0) {
      // The queue's run found nothing to answer: another run took the queue meanwhile, or
      // it waits behind the client's pending tool calls. (Before the manual branch: the
      // conversation went back to the cache already, hold() must not give it back again.)
      if (!manual) stats_.runs_admitted--;
      auto releasing = release(channel, r);
      co_await std::move(releasing);
      run_start none{channel};
      if (started.waits_for_client) none.held = "client_tool_calls";
      co_return none;
    }
    if (manual) {
      auto holding = hold(channel, r, std::move(session), std::move(started));
      co_return co_await std::move(holding);
    }
    launch(channel, r, std::move(session), std::move(started), request);
    co_return run_start{channel, r->id(), r->events_before(), false};
  } catch (...) {
    failure = std::current_exception();
  }
  if (!manual && !admission_ended) stats_.runs_admitted--;
  std::rethrow_exception(failure);
}

net::awaitable<std::optional<run_start>> run_service::enqueue(std::shared_ptr<session_channel> channel, session_record session,
                                                              start_request request) {
  queued_message_record queued{
      new_uuid(), session.id, std::move(request.content), std::string(name_of(event_source::customer)), clock_.wall_ms(), 0};
  // The bound is checked in the write itself: two POSTs racing for the last place cannot both win.
  auto write = [queued](store_connection& c) -> std::optional<std::pair<std::int64_t, std::int64_t>> {
    const auto waiting = c.queued_message_count(queued.session_id);
    if (waiting >= max_queued_messages) return std::nullopt;
    return std::pair{c.enqueue_message(queued), waiting + 1};
  };
  auto stored = co_await store_.async_write(std::move(write), net::use_awaitable);
  if (!stored)
    throw api_error(error_code::too_many_requests,
                    "this session already has " + std::to_string(max_queued_messages) + " queued messages");
  // Announced on the strand, then: if the live run ended while the row was written, nobody
  // else will start the queue's run.
  auto announce = [this, channel, id = queued.id, seq = stored->first,
                   waiting = stored->second]() -> net::awaitable<std::string> {
    channel->note_queued(seq);
    auto live = channel->live_run();
    boost::json::object data{{"status", "queued"}, {"message_id", id}, {"queued", waiting}};
    if (live) {
      channel->publish(live->id(), event_type::status, data, event_source::system);
      // Whatever holds the session (an agent's run, an operator's message, a held message),
      // the queue's run starts once it is free.
      net::co_spawn(channel->strand(), start_queued_when_idle(channel), net::detached);
    } else {
      channel->publish_outside_run(event_type::status, event_source::system, data);
      start_queued_if_waiting(channel);
    }
    co_return live ? live->id() : std::string();
  };
  auto announcing = net::co_spawn(channel->strand(), announce(), net::use_awaitable);
  auto live_run_id = co_await std::move(announcing);
  run_start out{channel, std::move(live_run_id)};
  out.held = "queued";
  out.message_id = queued.id;
  out.queued = stored->second;
  co_return out;
}

net::awaitable<void> run_service::interrupt(std::shared_ptr<session_channel> channel) {
  auto stop = [channel]() -> net::awaitable<void> {
    auto live = channel->live_run();
    if (!live) co_return;
    // Said before the run's own "aborted": why it stops.
    if (live->request_abort()) channel->publish(live->id(), event_type::status, "status", "interrupted", event_source::system);
    auto waiting = channel->wait_idle();
    co_await std::move(waiting);
  };
  auto stopping = net::co_spawn(channel->strand(), stop(), net::use_awaitable);
  co_await std::move(stopping);
}

net::awaitable<run_start> run_service::hold(std::shared_ptr<session_channel> channel, std::shared_ptr<run> r,
                                            session_record session, started_run started) {
  auto& messages = started.conversation.messages;
  std::vector<message_record> turn(messages.end() - static_cast<std::ptrdiff_t>(started.turn), messages.end());
  auto announce = [channel, r, turn, taken = started.taken_up_to]() -> net::awaitable<void> {
    if (taken) channel->note_taken(taken);
    for (const auto& m : turn) {
      boost::json::object data{{"message", message_json(m)}};
      channel->publish_outside_run(event_type::message, event_source::customer, data);
    }
    // Durable before the answer, like a run's events; then the session is free.
    auto committing = channel->wait_committed();
    co_await std::move(committing);
    if (channel->live_run() == r) channel->set_live_run(nullptr);
  };
  auto announcing = net::co_spawn(channel->strand(), announce(), net::use_awaitable);
  co_await std::move(announcing);
  conversations_->give_back(session.id, {started.checkpoint_version, std::move(started.conversation)});
  run_start out{channel};
  out.held = "stored";
  out.message_id = turn.empty() ? std::string() : turn.back().id;
  co_return out;
}

void run_service::start_queued_if_waiting(const std::shared_ptr<session_channel>& channel) {
  if (!channel->queue_waiting() || channel->live_run() || channel->closed() || channel->queue_starting()) return;
  channel->set_queue_starting(true);
  auto done = [this, channel](std::exception_ptr e, bool look_again) {
    channel->set_queue_starting(false);
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& why) {
        spdlog::warn("session {}: the run of its queued messages did not start: {}", channel->session_id(), why.what());
      }
      return;
    }
    // Queued while this one was starting, and it took none of them: look again. Not when
    // the queue waits for a client's tool results: the run they start looks when it ends.
    if (look_again) start_queued_if_waiting(channel);
  };
  // A member coroutine, not a capturing lambda: its frame owns copies of its arguments.
  net::co_spawn(channel->strand(), start_queued(channel), net::bind_executor(channel->strand(), std::move(done)));
}

net::awaitable<void> run_service::start_queued_when_idle(std::shared_ptr<session_channel> channel) {
  auto waiting = channel->wait_idle();
  co_await std::move(waiting);
  start_queued_if_waiting(channel);
}

net::awaitable<bool> run_service::start_queued(std::shared_ptr<session_channel> channel) {
  auto finding = sessions_.require(channel->session_id());
  auto session = co_await std::move(finding);
  start_request request;
  request.may_hold = true;  // in manual mode the queue's messages are held, not answered
  auto starting = start(std::move(session), std::move(request));
  auto started = co_await std::move(starting);
  co_return started.held != "client_tool_calls";
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
  if (auto channel = hub_.find(session.id)) {
    auto request_abort = [channel]() -> net::awaitable<std::pair<bool, std::string>> {
      auto live = channel->live_run();
      if (!live) co_return std::pair{false, std::string()};
      // A run whose end is already decided is as good as idle.
      if (!live->request_abort()) co_return std::pair{true, std::string()};
      co_return std::pair{true, live->id()};
    };
    auto aborting = net::co_spawn(channel->strand(), request_abort(), net::use_awaitable);
    auto [local, run_id] = co_await std::move(aborting);
    if (local) {
      if (run_id.empty()) co_return std::nullopt;
      co_return run_id;
    }
  }
  // No run lives here: another node's may (PostgreSQL). The request is recorded on its
  // lease, which the owner reads at its next renewal (within a third of the lease).
  auto record = [id = session.id, node = leases_.node_id](store_connection& c) -> std::optional<std::string> {
    auto lease = c.find_run_lease(id);
    if (!lease || lease->node_id == node) return std::nullopt;
    if (!c.request_run_abort(id, lease->run_id)) return std::nullopt;
    return lease->run_id;
  };
  co_return co_await store_.async_write(std::move(record), net::use_awaitable);
}

net::awaitable<void> run_service::keep_lease(std::shared_ptr<session_channel> channel, std::shared_ptr<run> r,
                                             run_lease_record lease, std::shared_ptr<lease_timer> timer) {
  const auto period = std::max<std::chrono::milliseconds>(leases_.duration / 3, std::chrono::milliseconds(50));
  const auto lease_ms = static_cast<std::int64_t>(leases_.duration.count());
  for (;;) {
    timer->timer.expires_after(period);
    auto pausing = timer->timer.async_wait(net::as_tuple(net::use_awaitable));
    co_await std::move(pausing);
    if (timer->ended || channel->live_run() != r || channel->closed() || channel->deleting() || channel->fenced()) co_return;
    auto renew = [id = lease.session_id, token = lease.token, lease_ms, &time = clock_](store_connection& c) {
      return c.renew_run_lease(id, token, time.wall_ms() + lease_ms);
    };
    auto renewing = store_.async_write(std::move(renew), net::as_tuple(net::use_awaitable));
    auto [error, renewal] = co_await std::move(renewing);
    if (timer->ended || channel->live_run() != r || channel->closed() || channel->deleting()) co_return;
    if (error) {
      // Not known: tried again next time (the lease may lapse meanwhile, then fencing decides).
      spdlog::warn("run {}: its lease could not be renewed; retrying", r->id());
      continue;
    }
    if (!renewal.held) {
      spdlog::warn("run {}: its lease was taken by another node; the run stops without writing more", r->id());
      channel->fence_out();
      co_return;
    }
    if (renewal.abort_requested && r->request_abort()) spdlog::info("run {}: aborted by a request on another node", r->id());
  }
}

void run_service::release_lease(const run_lease_record& lease) {
  auto release = [id = lease.session_id, token = lease.token](store_connection& c) { c.release_run_lease(id, token); };
  auto after = [id = lease.session_id](std::exception_ptr e) {
    // Not fatal: the lease lapses and a survivor finds the run ended (nothing to repair).
    if (e) spdlog::warn("session {}: its run's lease could not be released; it lapses", id);
  };
  store_.async_write(std::move(release), std::move(after));
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
  throw conflict(session, live_run_id);
}

// The user message is durable (checkpoint + projection + idempotency key) before any byte of the answer.
net::awaitable<run_service::started_run> run_service::persist_user_message(const std::shared_ptr<session_channel>& channel,
                                                                           const std::shared_ptr<run>& r,
                                                                           const session_record& session,
                                                                           const start_request& request,
                                                                           const std::string& hash) {
  std::shared_ptr<conversation_cache::entry> cached;
  if (auto kept = conversations_->take(session.id)) cached = std::make_shared<conversation_cache::entry>(std::move(*kept));
  const bool manual = session.mode == "manual";
  // The request's own input: its user message, or the client's tool results; none for the
  // queue's run (then only queued messages make the turn).
  std::vector<message_record> input;
  if (!request.content.empty() || !request.tool_results.empty()) input = input_messages(session, request, clock_);
  auto persist = [session, input, run_id = r->id(), started = r->started_at_ms(), before = r->events_before(),
                  key = request.idempotency_key, hash, callback_url = request.callback_url, manual, &time = clock_, cached,
                  node = leases_.node_id, lease_ms = static_cast<std::int64_t>(leases_.duration.count())](store_connection& c) {
    started_run out;
    if (key) {
      // Expired keys go first: a key past its TTL starts a new run, it does not attach.
      c.purge_idempotency_keys(time.wall_ms() - idempotency_ttl_ms);
      if (auto existing = c.find_idempotency_key(session.id, *key)) {
        out.existing_key = existing;
        return out;
      }
    }
    if (!manual) {
      // The session's lease, before anything is written: PostgreSQL decides a race
      // between nodes (the row's lock orders them); the loser writes nothing (the 409).
      const auto now = time.wall_ms();
      // A dead node's run whose lease lapsed and that no survivor has closed yet: closed
      // here first, as the takeover would (error + done, partial content), or taking its
      // lease would leave it open for ever.
      if (auto held = c.find_run_lease(session.id);
          held && !held->run_id.empty() && held->node_id != node && held->expires_at_ms <= now)
        repair_lapsed_run(c, time, session.id, repair_lease{node, lease_ms});
      out.lease = c.acquire_run_lease(session.id, run_id, node, now, now + lease_ms);
      if (!out.lease) {
        auto holder = c.find_run_lease(session.id);
        out.refused_by = holder ? holder->run_id : std::string();
        return out;
      }
    }
    // Another node may have written the session's latest events: the run numbers on from the
    // log. (Token 0: a store one process serves, SQLite; its channel knows the last id.)
    if (!(out.lease && out.lease->token == 0))
      if (auto current = c.find_session(session.id)) out.log_last = current->last_event_id;
    const std::int64_t first = std::max(before, out.log_last);
    out.events_before = first;
    // A run that turns out to have nothing to answer gives its lease back in the same job.
    auto no_run = [&c, &out, &session] {
      if (out.lease) c.release_run_lease(session.id, out.lease->token);
      out.lease.reset();
    };
    if (key) c.insert_idempotency_key({session.id, *key, hash, run_id, first, time.wall_ms()});
    auto newest = newest_conversation(c, session, cached.get());
    out.conversation = std::move(newest.state);
    out.checkpoint_version = newest.version;
    const bool tool_results = !input.empty() && input.front().role == "tool";
    if (tool_results) {
      std::vector<client_tool_result> results;
      for (const auto& m : input) results.push_back({*m.tool_call_id, m.content});
      check_tool_results(out.conversation, results);
    } else if (input.empty() && !pending_tool_calls(out.conversation).empty()) {
      // The queue's run while the client owes results for its tools' calls: the queue waits
      // for the run those results start (its end starts the queue's run again), or for the
      // next user message, which abandons the calls (docs/frontends.md).
      out.waits_for_client = true;
      no_run();
      return out;
    } else {
      // The turn: every queued message, in arrival order, then this request's (docs/timeline.md).
      // Tool results take none: they must follow the calls they answer; the queue's run,
      // started when this run ends, takes them.
      for (const auto& q : c.take_queued_messages(session.id)) {
        out.conversation.messages.push_back(from_queue(q));
        out.dequeued.push_back(q.id);
        out.taken_up_to = std::max(out.taken_up_to, q.seq);
      }
    }
    for (const auto& m : input) out.conversation.messages.push_back(m);
    out.turn = out.dequeued.size() + input.size();
    if (out.turn == 0) {  // the queue's run, and another run took the queue
      no_run();
      return out;
    }
    const auto first_new = out.conversation.messages.size() - out.turn;
    for (auto i = first_new; i < out.conversation.messages.size(); ++i)
      out.conversation.messages[i].seq = static_cast<std::int64_t>(i + 1);
    // A held message is no run: the checkpoint keeps the last run's state.
    const auto& last = out.conversation.messages.back();
    if (!manual) out.conversation.run = checkpoint_run{run_id, "running", last.id, started, std::nullopt, first, callback_url};
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
  // Nothing was written for a key another POST holds, or while another node's run holds the
  // session: the conversation is as it was.
  const bool nothing_stored = started.existing_key || started.refused_by;
  if (!failure && nothing_stored && cached) conversations_->give_back(session.id, std::move(*cached));
  // Nothing was written for a queue another run took: the conversation read is still the newest.
  if (!failure && !nothing_stored && started.turn == 0)
    conversations_->give_back(session.id, {started.checkpoint_version, std::move(started.conversation)});
  if (!failure && !nothing_stored && started.lease && started.lease->token != 0) {
    // On the strand, before the run publishes anything: the channel takes on what other
    // nodes committed (the run numbers on from the log) and the run's batches carry its token.
    auto own = [channel, r, log_last = started.log_last, first = started.events_before,
                token = started.lease->token]() -> net::awaitable<void> {
      channel->follow_log(log_last);
      r->move_events_before(first);
      channel->set_fence(token);
      co_return;
    };
    auto owning = net::co_spawn(channel->strand(), own(), net::use_awaitable);
    co_await std::move(owning);
  }
  if (failure || nothing_stored) {
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
                      std::move(start.client_tools),
                      std::move(started.dequeued),
                      started.taken_up_to};
  auto driver = drive_run(channel, r, std::move(request), std::move(agent_impl), hub_.tools(), stats_);
  std::shared_ptr<lease_timer> renewals;
  if (started.lease && started.lease->token != 0) {  // token 0: a single-process store, nothing to renew
    renewals = std::make_shared<lease_timer>(channel->strand());
    net::co_spawn(channel->strand(), keep_lease(channel, r, *started.lease, renewals), net::detached);
  }
  // The admission (admit_run) ends with the run; then the queue's run, if messages wait.
  // Its done is committed (or it was fenced out): the lease goes.
  auto ended = [this, channel, run_id = r->id(), lease = started.lease, renewals](std::exception_ptr e) {
    stats_.runs_admitted--;
    if (renewals) {
      renewals->ended = true;
      renewals->timer.cancel();
    }
    if (e) spdlog::error("run {} ended by an unexpected exception", run_id);
    if (lease && lease->token != 0) release_lease(*lease);
    start_queued_if_waiting(channel);
  };
  net::co_spawn(channel->strand(), std::move(driver), net::bind_executor(channel->strand(), std::move(ended)));
}

run_start run_service::attach(const session_record& session, const idempotency_record& key, const std::string& hash) const {
  if (key.content_hash != hash)
    throw api_error(error_code::idempotency_mismatch, "this Idempotency-Key was used with different content");
  return run_start{hub_.channel(session), key.run_id, key.first_event_id, true};
}

}  // namespace agw::core
