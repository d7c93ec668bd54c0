#include "core/agents/openai/tool_call_assembler.hpp"

#include <boost/json/parse.hpp>

namespace agw::core::openai {

tool_call_assembler::slot* tool_call_assembler::find_index(std::int64_t index) {
  // The latest call with that index: after Ollama's repeated 0s, fragments go to the newest.
  for (auto it = calls_.rbegin(); it != calls_.rend(); ++it)
    if (it->index == index) return &*it;
  return nullptr;
}

tool_call_assembler::slot* tool_call_assembler::find_id(const std::string& id) {
  for (auto& s : calls_)
    if (s.call.id == id) return &s;
  return nullptr;
}

tool_call_assembler::slot& tool_call_assembler::start(std::int64_t index) {
  calls_.push_back({index, {}});
  return calls_.back();
}

namespace {

// The call's arguments are a whole JSON value: a fragment that names a function
// after this starts another call (a split call's arguments are still open).
bool arguments_complete(const assembled_call& c) {
  if (c.arguments.empty()) return false;
  boost::system::error_code ec;
  boost::json::parse(c.arguments, ec);
  return !ec;
}

}  // namespace

tool_call_assembler::slot* tool_call_assembler::target_for(const tool_call_fragment& f) {
  if (f.index) {
    auto* s = find_index(*f.index);
    // Same index, another id, after a whole call: Ollama's repeated 0 (not the rest of a split id).
    if (s && !f.id.empty() && s->call.id != f.id && arguments_complete(s->call)) return &start(*f.index);
    return s ? s : &start(*f.index);
  }
  // No index: by id; else a new call when the id differs from the latest call's or
  // a name follows whole arguments; else the rest of the latest call.
  if (!f.id.empty())
    if (auto* s = find_id(f.id)) return s;
  const auto next = static_cast<std::int64_t>(calls_.size());
  if (calls_.empty()) return &start(next);
  auto& last = calls_.back();
  if (!f.id.empty() && !last.call.id.empty()) return &start(next);
  if (!f.name.empty() && arguments_complete(last.call)) return &start(next);
  return &last;
}

void tool_call_assembler::add(const tool_call_fragment& f) {
  if (f.id.empty() && f.name.empty() && f.arguments.empty() && !f.index) return;
  auto* s = target_for(f);
  // Some servers repeat the whole id or name in every fragment: repeated, not split.
  if (f.id != s->call.id) s->call.id += f.id;
  if (f.name != s->call.name) s->call.name += f.name;
  s->call.arguments += f.arguments;
}

std::vector<assembled_call> tool_call_assembler::finish() const {
  std::vector<assembled_call> out;
  for (std::size_t i = 0; i < calls_.size(); ++i) {
    out.push_back(calls_[i].call);
    if (out.back().id.empty()) out.back().id = "call_" + std::to_string(i + 1);
  }
  return out;
}

}  // namespace agw::core::openai
