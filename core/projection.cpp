#include "core/projection.hpp"

namespace agw::core {
namespace {

bool same(const message_record& a, const message_record& b) {
  return a.id == b.id && a.seq == b.seq && a.role == b.role && a.content == b.content && a.tool_calls == b.tool_calls &&
         a.tool_call_id == b.tool_call_id && a.token_count == b.token_count && a.model_used == b.model_used &&
         a.parent_id == b.parent_id && a.status == b.status && a.created_at_ms == b.created_at_ms;
}

}  // namespace

void save_checkpoint(store_connection& c, const clock& time, checkpoint_delta delta) {
  delta.created_at_ms = time.wall_ms();
  c.append_checkpoint(delta);
  // Only the delta's rows are rewritten: a run's checkpoints grow the tail of the conversation.
  for (const auto& m : delta.messages) c.upsert_message(m);
}

void save_checkpoint(store_connection& c, const clock& time, const session_record& s, std::int64_t version,
                     const conversation_state& state, std::size_t changed_from) {
  auto delta = make_checkpoint_delta(s, version, state, changed_from);
  delta.whole_state = &state;  // lives through this call
  save_checkpoint(c, time, std::move(delta));
}

std::optional<std::int64_t> rebuild_projection(store_connection& c, const std::string& session_id) {
  auto s = c.find_session(session_id);
  if (!s) return std::nullopt;
  c.delete_messages(session_id);
  auto cp = c.latest_conversation(s->thread_id);
  if (!cp) return 0;
  for (const auto& m : cp->state.messages) c.upsert_message(m);
  return static_cast<std::int64_t>(cp->state.messages.size());
}

bool projection_drifted(store_connection& c, const session_record& s) {
  auto cp = c.latest_conversation(s.thread_id);
  auto rows = c.all_messages(s.id);
  if (!cp) return !rows.empty();
  const auto& messages = cp->state.messages;
  if (rows.size() != messages.size()) return true;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (!same(rows[i], messages[i])) return true;
  return false;
}

}  // namespace agw::core
