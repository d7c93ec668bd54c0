#include "core/recovery.hpp"

#include <spdlog/spdlog.h>
#include <boost/json/parse.hpp>

#include "core/events/log_codec.hpp"
#include "core/events/sse_format.hpp"
#include "core/ids.hpp"
#include "core/projection.hpp"
#include "core/webhooks/webhook_delivery.hpp"

namespace agw::core {
namespace {

// What the log holds of a run: the content its committed token events carried, the
// last id read, and whether its done made it.
struct run_in_log {
  std::string content;
  std::int64_t tokens = 0;
  std::int64_t last_id = 0;
  std::optional<std::string> done_status;  // the status its done's assistant_data carried
};

run_in_log read_run(store_connection& c, const std::string& session_id, const checkpoint_run& run) {
  run_in_log out;
  out.last_id = run.events_before;
  for (;;) {
    auto events = c.events_after(session_id, out.last_id, 1000);
    if (events.empty()) break;
    for (const auto& frame : events) {
      out.last_id = frame->id;
      if (frame->run_id() != run.id) continue;
      if (frame->type == event_type::done) {
        auto data = boost::json::parse(frame->data());
        const auto* answer = data.as_object().if_contains("assistant_data");
        const auto* status = answer && answer->is_object() ? answer->as_object().if_contains("status") : nullptr;
        out.done_status = status && status->is_string() ? std::string(status->get_string()) : "error";
      }
      if (frame->type != event_type::token) continue;
      auto data = boost::json::parse(frame->data());
      out.content += std::string(data.at("content").as_string());
      ++out.tokens;
    }
  }
  return out;
}

// Appends `frames` (consecutive ids) to the session's log.
void append_ending(store_connection& c, const clock& time, const std::string& session_id, std::vector<frame_ptr> frames) {
  c.append_events({session_id, frames.front()->id, frames.back()->id, encode_log_frames(frames), time.wall_ms()});
}

// Closes the session's cut-short run; true when there was one. A run whose done reached
// the log already (its end could not be stored) is recorded as it ended, with no second
// end; one whose end was decided but whose done never reached the log gets that done.
// Takes the session's lease for the repair (false: another node's run holds it live, or
// another node repairs it now); given back once the repair is written.
struct lease_hold {
  store_connection& c;
  std::string session_id;
  std::optional<run_lease_record> held;
  ~lease_hold() {
    // Unwinding from a failed repair, the transaction is aborted and this throws too; the
    // rollback undoes the taking anyway. A destructor must not throw.
    try {
      if (held) c.release_run_lease(session_id, held->token);
    } catch (...) {
    }
  }
};
bool take_lease(lease_hold& hold, const clock& time, std::string_view run_id, const repair_lease& lease) {
  const auto now = time.wall_ms();
  hold.held = hold.c.acquire_run_lease(hold.session_id, run_id, lease.node_id, now, now + lease.lease_ms);
  return hold.held.has_value();
}

bool close_interrupted_run(store_connection& c, const clock& time, const session_record& s, const repair_lease& lease) {
  auto cp = c.latest_conversation(s.thread_id);
  if (!cp) return false;
  auto& state = cp->state;
  if (!state.run) return false;
  lease_hold hold{c, s.id, std::nullopt};
  if (state.run->state != "running") {
    // Finished: its done is the session's last event, unless the process stopped first
    // (a run with no event in the log at all has nothing to end).
    if (s.last_event_id <= state.run->events_before) return false;
    auto last = c.events_after(s.id, std::max<std::int64_t>(0, s.last_event_id - 1), 1);
    if (!last.empty() && last.front()->type == event_type::done && last.front()->run_id() == state.run->id) return false;
    // Events of no run (custom events, held messages) or an operator's turn may follow the
    // run's done (docs/timeline.md): then its done is further back among its own events.
    if (read_run(c, s.id, *state.run).done_status) return false;
    if (state.messages.empty() || state.messages.back().role != "assistant") return false;
    if (!take_lease(hold, time, state.run->id, lease)) return false;
    const std::int64_t next = std::max(s.last_event_id, state.run->events_before) + 1;
    auto done =
        make_event_frame(next, event_type::done, state.run->id, {{"assistant_data", message_json(state.messages.back())}});
    append_ending(c, time, s.id, {std::make_shared<const event_frame>(std::move(done))});
    return true;
  }

  if (!take_lease(hold, time, state.run->id, lease)) return false;
  // What clients saw of the run is exactly its committed token events (read under the
  // lease: its owner, fenced out, commits no more).
  auto seen = read_run(c, s.id, *state.run);
  message_record answer;
  answer.id = new_uuid();
  answer.session_id = s.id;
  answer.role = "assistant";
  answer.content = std::move(seen.content);
  answer.token_count = seen.tokens;
  answer.parent_id = state.run->user_message_id;
  answer.status = seen.done_status.value_or("interrupted");
  answer.created_at_ms = time.wall_ms();
  state.messages.push_back(answer);
  answer.seq = static_cast<std::int64_t>(state.messages.size());
  state.run->state = seen.done_status ? (*seen.done_status == "complete" ? "completed" : *seen.done_status) : "interrupted";
  state.run->ended_at_ms = answer.created_at_ms;
  save_checkpoint(c, time, s, cp->version + 1, state, state.messages.size() - 1);
  // The run ended (badly): its callback is still owed.
  if (state.run->callback_url)
    c.insert_webhook_delivery(make_webhook_delivery(s.id, state.run->id, *state.run->callback_url, answer, 0));
  if (seen.done_status) return true;  // its followers saw it end already

  // Followers resuming this session see the run end like any other.
  const std::int64_t last = std::max(s.last_event_id, seen.last_id);
  auto error = make_event_frame(last + 1, event_type::error, state.run->id,
                                {{"code", "interrupted"}, {"message", "the server stopped while this run was live"}});
  auto done = make_event_frame(last + 2, event_type::done, state.run->id, {{"assistant_data", message_json(answer)}});
  append_ending(c, time, s.id,
                {std::make_shared<const event_frame>(std::move(error)), std::make_shared<const event_frame>(std::move(done))});
  return true;
}

}  // namespace

std::optional<std::int64_t> repair_lapsed_run(store_connection& c, const clock& time, std::string_view session_id,
                                              const repair_lease& lease) {
  auto s = c.find_session(session_id);
  if (!s) return std::nullopt;
  if (!close_interrupted_run(c, time, *s, lease)) {
    // Nothing to close (its done was committed, the lease was not released): free it.
    auto lapsed = c.find_run_lease(session_id);
    const auto now = time.wall_ms();
    if (lapsed && lapsed->expires_at_ms <= now)
      if (auto taken = c.acquire_run_lease(session_id, lapsed->run_id, lease.node_id, now, now + lease.lease_ms))
        c.release_run_lease(session_id, taken->token);
    return std::nullopt;
  }
  auto after = c.find_session(session_id);
  return after ? after->last_event_id : s->last_event_id;
}

recovery_report recover_at_startup(store_connection& c, const clock& time, const repair_lease& lease) {
  recovery_report report;
  for (const auto& id : c.all_session_ids()) {
    c.begin_batch();
    try {
      auto s = c.find_session(id);
      // Counted once committed: a repair rolled back did not happen.
      bool interrupted = false, rebuilt = false;
      if (s) {
        ++report.sessions_checked;
        interrupted = close_interrupted_run(c, time, *s, lease);
        rebuilt = projection_drifted(c, *s);
        if (rebuilt) rebuild_projection(c, id);
      }
      c.commit_batch();
      report.runs_interrupted += interrupted ? 1 : 0;
      report.projections_rebuilt += rebuilt ? 1 : 0;
    } catch (const std::exception& e) {
      c.rollback_batch();
      spdlog::error("start-up repair of session {} failed: {}", id, e.what());
    }
  }
  // Webhook claims this process made before it stopped (SQLite: every claim, no other
  // process serves the store; PostgreSQL: the claims under this node's id, the other
  // nodes' attempts are under way) are released, so an attempt a crash cut is sent
  // again at once, not when its claim expires.
  c.begin_batch();
  try {
    c.release_webhook_claims();
    c.commit_batch();
  } catch (const std::exception& e) {
    c.rollback_batch();
    spdlog::error("start-up repair: releasing webhook claims failed: {}", e.what());
  }
  return report;
}

}  // namespace agw::core
