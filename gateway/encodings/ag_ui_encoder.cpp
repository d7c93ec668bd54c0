#include "gateway/encodings/ag_ui_encoder.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace agw::gateway {
namespace {

namespace json = boost::json;

std::string_view string_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view{};
}

std::int64_t int_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v && v->is_int64()) return v->get_int64();
  if (v && v->is_uint64()) return static_cast<std::int64_t>(v->get_uint64());
  return 0;
}

// Our usage event as AG-UI's TokenUsage list (camelCase counts, totals only).
json::array usage_list(const json::object& usage) {
  json::object u;
  if (auto p = string_at(usage, "provider"); !p.empty()) u["provider"] = p;
  if (auto m = string_at(usage, "model"); !m.empty()) u["model"] = m;
  const auto in = int_at(usage, "input_tokens"), out = int_at(usage, "output_tokens");
  u["inputTokens"] = in;
  u["outputTokens"] = out;
  u["totalTokens"] = in + out;
  return json::array{std::move(u)};
}

}  // namespace

// The frame being encoded: every AG-UI event it yields carries its id.
struct ag_ui_encoder::sink {
  std::int64_t id;
  std::string& out;

  void emit(const json::object& event) {
    out += "id: ";
    out += std::to_string(id);
    out += "\ndata: ";
    out += json::serialize(event);  // one line: the serializer never writes a raw newline
    out += "\n\n";
  }
};

ag_ui_encoder::ag_ui_encoder(std::string thread_id, std::string client_run_id, std::string run_id)
    : thread_id_(std::move(thread_id)), client_run_id_(std::move(client_run_id)), run_id_(std::move(run_id)) {}

void ag_ui_encoder::encode(const core::event_frame& frame, std::string& out) {
  // Unnumbered frames (reconnected) and other runs' events have no AG-UI form here.
  if (finished_ || frame.id < 0 || frame.run_id() != run_id_) return;
  json::error_code ec;
  auto parsed = json::parse(frame.data(), ec);
  if (ec || !parsed.is_object()) return;
  const auto& data = parsed.get_object();
  sink to{frame.id, out};
  start_run(to);
  using core::event_type;
  switch (frame.type) {
    case event_type::token:
      return on_token(to, string_at(data, "content"));
    case event_type::reasoning:
      return on_reasoning(to, string_at(data, "content"));
    case event_type::tool_call:
      return on_tool_call(to, data);
    case event_type::tool_result:
      return on_tool_result(to, data);
    case event_type::planning:
      return on_planning(to, data);
    case event_type::step_complete:
      return on_step_complete(to, data);
    case event_type::usage:
      return on_usage(data);
    case event_type::error:
      error_code_ = std::string(string_at(data, "code"));
      error_message_ = std::string(string_at(data, "message"));
      return;
    case event_type::done:
      return on_done(to, data);
    case event_type::custom:
    case event_type::delegation: {
      // Not AG-UI concepts: passed on as CUSTOM events under our names.
      json::object value = data;
      value.erase("run_id");
      return to.emit({{"type", "CUSTOM"}, {"name", core::name_of(frame.type)}, {"value", std::move(value)}});
    }
    default:
      return;  // status (RUN_* say it), message (not part of a run's answer)
  }
}

void ag_ui_encoder::start_run(sink& to) {
  if (started_) return;
  started_ = true;
  to.emit({{"type", "RUN_STARTED"}, {"threadId", thread_id_}, {"runId", client_run_id_}});
}

std::string ag_ui_encoder::next_message_id(std::string_view kind) {
  // From the run id and the count: the same on every replay of the run.
  return run_id_ + "-" + std::string(kind) + "-" + std::to_string(++messages_);
}

void ag_ui_encoder::on_token(sink& to, std::string_view delta) {
  if (delta.empty()) return;  // an empty delta would open a message with nothing in it
  close_reasoning(to);
  if (text_id_.empty()) {
    text_id_ = next_message_id("text");
    tool_parent_id_.clear();
    to.emit({{"type", "TEXT_MESSAGE_START"}, {"messageId", text_id_}, {"role", "assistant"}});
  }
  to.emit({{"type", "TEXT_MESSAGE_CONTENT"}, {"messageId", text_id_}, {"delta", delta}});
}

void ag_ui_encoder::on_reasoning(sink& to, std::string_view delta) {
  if (delta.empty()) return;
  close_text(to);
  if (reasoning_id_.empty()) {
    reasoning_id_ = next_message_id("reasoning");
    to.emit({{"type", "REASONING_START"}, {"messageId", reasoning_id_}});
    to.emit({{"type", "REASONING_MESSAGE_START"}, {"messageId", reasoning_id_}, {"role", "reasoning"}});
  }
  to.emit({{"type", "REASONING_MESSAGE_CONTENT"}, {"messageId", reasoning_id_}, {"delta", delta}});
}

void ag_ui_encoder::on_tool_call(sink& to, const json::object& data) {
  close_reasoning(to);
  // The calls belong to the assistant message just streamed (as the model sent them), or
  // to a new one when no text came before them.
  if (!text_id_.empty()) tool_parent_id_ = text_id_;
  close_text(to);
  if (tool_parent_id_.empty()) tool_parent_id_ = next_message_id("assistant");
  const auto id = string_at(data, "id");
  const auto* args = data.if_contains("args");
  to.emit({{"type", "TOOL_CALL_START"},
           {"toolCallId", id},
           {"toolCallName", string_at(data, "name")},
           {"parentMessageId", tool_parent_id_}});
  to.emit({{"type", "TOOL_CALL_ARGS"}, {"toolCallId", id}, {"delta", args ? json::serialize(*args) : std::string("{}")}});
  to.emit({{"type", "TOOL_CALL_END"}, {"toolCallId", id}});
}

void ag_ui_encoder::on_tool_result(sink& to, const json::object& data) {
  close_reasoning(to);
  close_text(to);
  // The next tool calls belong to the model's next message.
  tool_parent_id_.clear();
  const auto call = string_at(data, "tool_call_id");
  to.emit({{"type", "TOOL_CALL_RESULT"},
           {"messageId", run_id_ + "-tool-" + std::string(call)},
           {"toolCallId", call},
           {"content", string_at(data, "output")},
           {"role", "tool"}});
}

void ag_ui_encoder::on_planning(sink& to, const json::object& data) {
  plan_.clear();
  if (const auto* todos = data.if_contains("todos"); todos && todos->is_array())
    for (const auto& t : todos->get_array())
      if (t.is_string()) plan_.emplace_back(t.get_string());
  close_step(to);
  if (plan_.empty()) return;
  open_step_ = plan_.front();
  to.emit({{"type", "STEP_STARTED"}, {"stepName", *open_step_}});
}

void ag_ui_encoder::on_step_complete(sink& to, const json::object& data) {
  const auto number = int_at(data, "step_number");  // 1-based
  if (!open_step_) {
    // A step finished that no plan opened: open and close it under its description.
    open_step_ = std::string(string_at(data, "description"));
    to.emit({{"type", "STEP_STARTED"}, {"stepName", *open_step_}});
  }
  close_step(to);
  if (number >= 1 && static_cast<std::size_t>(number) < plan_.size()) {
    open_step_ = plan_[static_cast<std::size_t>(number)];
    to.emit({{"type", "STEP_STARTED"}, {"stepName", *open_step_}});
  }
}

void ag_ui_encoder::on_usage(const json::object& data) { usage_ = data; }

void ag_ui_encoder::on_done(sink& to, const json::object& data) {
  close_all(to);
  finished_ = true;
  std::string_view status;
  if (const auto* m = data.if_contains("assistant_data"); m && m->is_object()) status = string_at(m->get_object(), "status");
  if (status == "error" || error_code_) {
    json::object ev{{"type", "RUN_ERROR"},
                    {"message", error_message_ && !error_message_->empty() ? *error_message_ : std::string("the run failed")},
                    {"code", error_code_ && !error_code_->empty() ? *error_code_ : std::string("error")}};
    if (usage_) ev["usage"] = usage_list(*usage_);
    return to.emit(ev);
  }
  json::object ev{{"type", "RUN_FINISHED"}, {"threadId", thread_id_}, {"runId", client_run_id_}};
  // An abort is AG-UI's cancelled outcome: stopped, not failed, nothing waited for.
  ev["outcome"] = json::object{{"type", status == "aborted" ? "cancelled" : "success"}};
  if (usage_) ev["usage"] = usage_list(*usage_);
  to.emit(ev);
}

void ag_ui_encoder::close_text(sink& to) {
  if (text_id_.empty()) return;
  to.emit({{"type", "TEXT_MESSAGE_END"}, {"messageId", text_id_}});
  text_id_.clear();
}

void ag_ui_encoder::close_reasoning(sink& to) {
  if (reasoning_id_.empty()) return;
  to.emit({{"type", "REASONING_MESSAGE_END"}, {"messageId", reasoning_id_}});
  to.emit({{"type", "REASONING_END"}, {"messageId", reasoning_id_}});
  reasoning_id_.clear();
}

void ag_ui_encoder::close_step(sink& to) {
  if (!open_step_) return;
  to.emit({{"type", "STEP_FINISHED"}, {"stepName", *open_step_}});
  open_step_.reset();
}

void ag_ui_encoder::close_all(sink& to) {
  close_reasoning(to);
  close_text(to);
  close_step(to);
}

}  // namespace agw::gateway
