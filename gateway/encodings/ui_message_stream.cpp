#include "gateway/encodings/ui_message_stream.hpp"

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <string_view>

#include "core/events/sse_format.hpp"

namespace agw::gateway {
namespace {

using core::event_type;
using open_part = ui_stream_state::open_part;

// One chunk's frame: the event id it came from, one data line of JSON (the serializer
// never writes a raw newline), and the blank line. LF only: the AI SDK's parser takes
// CRLF too, but one form everywhere keeps the byte tests exact.
void put_chunk(std::string& out, std::int64_t id, const boost::json::object& chunk) {
  out += "id: ";
  out += std::to_string(id);
  out += "\ndata: ";
  out += boost::json::serialize(chunk);
  out += "\n\n";
}

std::string part_id(std::string_view prefix, std::int64_t event_id) {
  std::string id(prefix);
  id += std::to_string(event_id);
  return id;
}

std::string_view string_member(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

// Ends the open text or reasoning part, if any.
void end_part(ui_stream_state& s, std::int64_t id, std::string& out) {
  if (s.open == open_part::text) put_chunk(out, id, {{"type", "text-end"}, {"id", part_id("text-", s.part_event)}});
  if (s.open == open_part::reasoning)
    put_chunk(out, id, {{"type", "reasoning-end"}, {"id", part_id("reasoning-", s.part_event)}});
  s.open = open_part::none;
}

// Content is about to be sent: a step must be open, a new one after a tool's result
// (the AI SDK's steps: one model call each, the tool's output ends the step).
void ensure_step(ui_stream_state& s, std::int64_t id, std::string& out) {
  if (s.after_tool_result && s.step_open) {
    end_part(s, id, out);
    put_chunk(out, id, {{"type", "finish-step"}});
    s.step_open = false;
  }
  s.after_tool_result = false;
  if (!s.step_open) {
    put_chunk(out, id, {{"type", "start-step"}});
    s.step_open = true;
  }
}

// A text or reasoning delta: opens its kind of part if another (or none) is open.
// `delta_json` is the delta as a JSON string literal, quotes included.
void put_delta(ui_stream_state& s, std::int64_t id, open_part kind, std::string_view delta_json, std::string& out) {
  ensure_step(s, id, out);
  const std::string_view prefix = kind == open_part::text ? "text-" : "reasoning-";
  if (s.open != kind) {
    end_part(s, id, out);
    s.open = kind;
    s.part_event = id;
    put_chunk(out, id, {{"type", kind == open_part::text ? "text-start" : "reasoning-start"}, {"id", part_id(prefix, id)}});
  }
  // Most of a run's chunks: written without a JSON object (the part id needs no escaping).
  out += "id: ";
  out += std::to_string(id);
  out +=
      kind == open_part::text ? "\ndata: {\"type\":\"text-delta\",\"id\":\"" : "\ndata: {\"type\":\"reasoning-delta\",\"id\":\"";
  out += prefix;
  out += std::to_string(s.part_event);
  out += "\",\"delta\":";
  out += delta_json;
  out += "}\n\n";
}

// A token's or reasoning's content as a JSON string literal. The contract's encoding
// already holds it escaped: data is {"run_id":"<run>","source":"<source>","content":"..."}
// as sse_format writes it (and the log gives back), so the literal is sliced out, not
// parsed and written again. Any other layout is parsed.
std::string delta_literal(const core::event_frame& frame) {
  const std::string_view data = frame.data();
  constexpr std::string_view content_lead = ",\"content\":";
  const std::string_view members = core::members_after_run_lead(frame);
  if (members.starts_with(content_lead) && members.size() >= content_lead.size() + 3 && members.ends_with("\"}") &&
      members[content_lead.size()] == '"') {
    const auto literal = members.substr(content_lead.size(), members.size() - content_lead.size() - 1);
    // The literal ends at its closing quote: no other member follows it.
    bool escaped = false;
    std::size_t quotes = 0;
    for (char c : literal) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        ++quotes;
      }
    }
    if (quotes == 2) return std::string(literal);
  }
  boost::system::error_code ec;
  auto parsed = boost::json::parse(data, ec);
  std::string_view content;
  if (!ec && parsed.is_object()) content = string_member(parsed.get_object(), "content");
  return boost::json::serialize(boost::json::value(content));
}

void put_tool_call(ui_stream_state& s, std::int64_t id, const boost::json::object& data, std::string& out) {
  ensure_step(s, id, out);
  end_part(s, id, out);
  const auto call_id = string_member(data, "id");
  const auto name = string_member(data, "name");
  put_chunk(out, id, {{"type", "tool-input-start"}, {"toolCallId", call_id}, {"toolName", name}});
  boost::json::value input = boost::json::object();
  if (const auto* args = data.if_contains("args")) input = *args;
  put_chunk(out, id,
            {{"type", "tool-input-available"}, {"toolCallId", call_id}, {"toolName", name}, {"input", std::move(input)}});
}

void put_tool_result(ui_stream_state& s, std::int64_t id, const boost::json::object& data, std::string& out) {
  ensure_step(s, id, out);
  end_part(s, id, out);
  const auto call_id = string_member(data, "tool_call_id");
  const auto output = string_member(data, "output");
  const auto* exit_code = data.if_contains("exit_code");
  const bool failed = exit_code && exit_code->is_int64() && exit_code->get_int64() != 0;
  if (failed)
    put_chunk(out, id, {{"type", "tool-output-error"}, {"toolCallId", call_id}, {"errorText", output}});
  else
    put_chunk(out, id, {{"type", "tool-output-available"}, {"toolCallId", call_id}, {"output", output}});
  s.after_tool_result = true;
}

void put_finish(ui_stream_state& s, std::int64_t id, const boost::json::object& data, std::string& out) {
  end_part(s, id, out);
  if (s.step_open) put_chunk(out, id, {{"type", "finish-step"}});
  s.step_open = false;
  std::string_view status;
  if (const auto* a = data.if_contains("assistant_data"); a && a->is_object()) status = string_member(a->get_object(), "status");
  const char* reason = "stop";
  if (s.failed || status == "error")
    reason = "error";
  else if (s.aborted || status == "aborted")
    reason = "other";
  put_chunk(out, id, {{"type", "finish"}, {"finishReason", reason}});
  out += "data: [DONE]\n\n";
  s.finished = true;
}

}  // namespace

void encode_ui_message_chunks(ui_stream_state& state, const core::event_frame& frame, std::string& out) {
  if (frame.id < 0 || state.finished) return;
  const std::int64_t id = frame.id;
  if (!state.started) {
    boost::json::object start{{"type", "start"}};
    if (!frame.run_id().empty()) start["messageId"] = frame.run_id();
    put_chunk(out, id, start);
    state.started = true;
  }
  switch (frame.type) {
    case event_type::token:
      return put_delta(state, id, open_part::text, delta_literal(frame), out);
    case event_type::reasoning:
      return put_delta(state, id, open_part::reasoning, delta_literal(frame), out);
    case event_type::tool_call:
    case event_type::tool_result:
    case event_type::error:
    case event_type::status:
    case event_type::done:
      break;
    default:
      return;  // nothing of the AI SDK's: the data is not even parsed
  }
  boost::system::error_code ec;
  auto parsed = boost::json::parse(frame.data(), ec);
  static const boost::json::object empty;
  const auto& data = !ec && parsed.is_object() ? parsed.get_object() : empty;
  switch (frame.type) {
    case event_type::tool_call:
      return put_tool_call(state, id, data, out);
    case event_type::tool_result:
      return put_tool_result(state, id, data, out);
    case event_type::error: {
      end_part(state, id, out);
      auto message = string_member(data, "message");
      put_chunk(out, id, {{"type", "error"}, {"errorText", message.empty() ? string_member(data, "code") : message}});
      state.failed = true;
      return;
    }
    case event_type::status:
      if (string_member(data, "status") == "aborted") state.aborted = true;
      return;
    case event_type::done:
      return put_finish(state, id, data, out);
    default:
      return;
  }
}

}  // namespace agw::gateway
