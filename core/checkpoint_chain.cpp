#include "core/checkpoint_chain.hpp"

#include "core/storage/store_error.hpp"

namespace agw::core {

bool snapshot_due(std::int64_t delta_bytes, std::int64_t snapshot_bytes) { return delta_bytes >= snapshot_bytes; }

checkpoint_row plan_checkpoint_row(const std::optional<checkpoint_tip>& tip, const checkpoint_delta& d,
                                   const std::function<conversation_state()>& newest_state) {
  if (tip && d.version != tip->version + 1)
    throw store_error("checkpoint version " + std::to_string(d.version) + " of " + d.thread_id + " does not follow version " +
                      std::to_string(tip->version));
  if (tip && tip->message_count >= 0) check_delta_fits(d, tip->message_count);
  checkpoint_row row;
  row.message_count = d.message_count;
  row.text = serialize_delta(d);
  const auto bytes = static_cast<std::int64_t>(row.text.size());
  if (tip && !snapshot_due(tip->delta_bytes + bytes, tip->snapshot_bytes)) {
    row.delta_bytes = tip->delta_bytes + bytes;
    row.snapshot_bytes = tip->snapshot_bytes;
    return row;
  }
  // The whole state: the writer's own copy when it has one (the same messages, the same
  // run), else read once per snapshot, which the deltas since have paid for.
  if (d.whole_state && static_cast<std::int64_t>(d.whole_state->messages.size()) == d.message_count)
    return snapshot_row(serialize_checkpoint(*d.whole_state), d.message_count);
  conversation_state state = tip ? newest_state() : conversation_state{};
  apply_delta(state, d);
  return snapshot_row(serialize_checkpoint(state), d.message_count);
}

checkpoint_row snapshot_row(std::string text, std::int64_t message_count) {
  checkpoint_row row;
  row.snapshot = true;
  row.message_count = message_count;
  row.snapshot_bytes = static_cast<std::int64_t>(text.size());
  row.text = std::move(text);
  return row;
}

conversation_state fold_checkpoints(std::string_view snapshot, const std::vector<std::string>& deltas,
                                    const std::string& session_id) {
  auto state = parse_checkpoint(snapshot, session_id);
  for (const auto& text : deltas) apply_delta(state, parse_delta(text, session_id));
  return state;
}

}  // namespace agw::core
