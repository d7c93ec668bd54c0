#include "core/checkpoint_delta.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <stdexcept>

#include "core/checkpoint_json.hpp"

namespace agw::core {

checkpoint_delta make_checkpoint_delta(const session_record& s, std::int64_t version, const conversation_state& state,
                                       std::size_t changed_from) {
  checkpoint_delta d;
  d.thread_id = s.thread_id;
  d.session_id = s.id;
  d.version = version;
  d.message_count = static_cast<std::int64_t>(state.messages.size());
  d.messages.reserve(state.messages.size() - std::min(changed_from, state.messages.size()));
  for (std::size_t i = changed_from; i < state.messages.size(); ++i) {
    d.messages.push_back(state.messages[i]);
    d.messages.back().session_id = s.id;
    d.messages.back().seq = static_cast<std::int64_t>(i + 1);  // the conversation's order is the projection's order
  }
  d.run = state.run;
  return d;
}

std::string serialize_delta(const checkpoint_delta& d) {
  boost::json::array messages;
  messages.reserve(d.messages.size());
  for (const auto& m : d.messages) {
    auto o = checkpoint_json::message_to_json(m);
    o["seq"] = m.seq;
    messages.push_back(std::move(o));
  }
  boost::json::object out{
      {"format", checkpoint_json::format_version}, {"message_count", d.message_count}, {"messages", std::move(messages)}};
  out["run"] = checkpoint_json::run_to_json(d.run);
  return boost::json::serialize(out);
}

checkpoint_delta parse_delta(std::string_view text, const std::string& session_id) {
  auto root = boost::json::parse(text).as_object();
  checkpoint_json::require_format(root);
  checkpoint_delta d;
  d.session_id = session_id;
  d.message_count = root.at("message_count").to_number<std::int64_t>();
  const auto& messages = root.at("messages").as_array();
  d.messages.reserve(messages.size());
  for (const auto& v : messages) {
    d.messages.push_back(checkpoint_json::message_from_json(v.as_object(), session_id));
    d.messages.back().seq = v.as_object().at("seq").to_number<std::int64_t>();
  }
  d.run = checkpoint_json::run_from_json(root.if_contains("run"));
  return d;
}

void check_delta_fits(const checkpoint_delta& d, std::int64_t previous_count) {
  if (d.message_count < 0) throw std::runtime_error("checkpoint delta with a negative message count");
  // In seq order, each once, inside the new count; every position past the old end filled.
  std::int64_t previous = 0, past_end = 0;
  for (const auto& m : d.messages) {
    if (m.seq <= previous || m.seq > d.message_count) throw std::runtime_error("checkpoint delta message out of place");
    previous = m.seq;
    if (m.seq > previous_count) ++past_end;
  }
  if (past_end < d.message_count - previous_count) throw std::runtime_error("checkpoint delta leaves a message missing");
}

void apply_delta(conversation_state& state, checkpoint_delta d) {
  check_delta_fits(d, static_cast<std::int64_t>(state.messages.size()));
  state.messages.resize(static_cast<std::size_t>(d.message_count));
  for (auto& m : d.messages) state.messages[static_cast<std::size_t>(m.seq - 1)] = std::move(m);
  state.run = std::move(d.run);
}

}  // namespace agw::core
