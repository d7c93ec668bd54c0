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

// Closes the session's cut-short run; true when there was one.
bool close_interrupted_run(store_connection& c, const clock& time, const session_record& s) {
  auto cp = c.latest_checkpoint(s.thread_id);
  if (!cp) return false;
  auto state = parse_checkpoint(cp->state, s.id);
  if (!state.run || state.run->state != "running") return false;

  // What clients saw of the run is exactly its committed token events.
  std::string content;
  std::int64_t tokens = 0;
  std::int64_t after = state.run->events_before;
  for (;;) {
    auto events = c.events_after(s.id, after, 1000);
    if (events.empty()) break;
    for (const auto& frame : events) {
      after = frame->id;
      if (frame->run_id() != state.run->id || frame->type != event_type::token) continue;
      auto data = boost::json::parse(frame->data());
      content += std::string(data.at("content").as_string());
      ++tokens;
    }
  }
  message_record answer;
  answer.id = new_uuid();
  answer.session_id = s.id;
  answer.role = "assistant";
  answer.content = std::move(content);
  answer.token_count = tokens;
  answer.parent_id = state.run->user_message_id;
  answer.status = "interrupted";
  answer.created_at_ms = time.wall_ms();
  state.messages.push_back(answer);
  answer.seq = static_cast<std::int64_t>(state.messages.size());
  state.run->state = "interrupted";
  state.run->ended_at_ms = answer.created_at_ms;
  save_checkpoint(c, time, s, cp->version + 1, state, state.messages.size() - 1);
  // The run ended (badly): its callback is still owed.
  if (state.run->callback_url)
    c.insert_webhook_delivery(make_webhook_delivery(s.id, state.run->id, *state.run->callback_url, answer, 0));

  // Followers resuming this session see the run end like any other.
  const std::int64_t last = std::max(s.last_event_id, after);
  auto error = make_event_frame(last + 1, event_type::error, state.run->id,
                                {{"code", "interrupted"}, {"message", "the server stopped while this run was live"}});
  auto done = make_event_frame(last + 2, event_type::done, state.run->id, {{"assistant_data", message_json(answer)}});
  const frame_ptr ending[] = {std::make_shared<const event_frame>(std::move(error)),
                              std::make_shared<const event_frame>(std::move(done))};
  c.append_events({s.id, last + 1, last + 2, encode_log_frames(ending), time.wall_ms()});
  return true;
}

}  // namespace

recovery_report recover_at_startup(store_connection& c, const clock& time) {
  recovery_report report;
  for (const auto& id : c.all_session_ids()) {
    c.begin_batch();
    try {
      auto s = c.find_session(id);
      if (s) {
        ++report.sessions_checked;
        if (close_interrupted_run(c, time, *s)) ++report.runs_interrupted;
        if (projection_drifted(c, *s)) {
          rebuild_projection(c, id);
          ++report.projections_rebuilt;
        }
      }
      c.commit_batch();
    } catch (const std::exception& e) {
      c.rollback_batch();
      spdlog::error("start-up repair of session {} failed: {}", id, e.what());
    }
  }
  return report;
}

}  // namespace agw::core
