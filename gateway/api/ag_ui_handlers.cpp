// POST /ag-ui/{session_id} and POST /ag-ui: AG-UI's RunAgentInput in, AG-UI events out
// (docs/frontends.md, "AG-UI (CopilotKit)"). The run is started by core::run_service
// exactly as POST /sessions/{id}/messages starts it (409, Idempotency-Key, abort); the
// response is the same run stream in the AG-UI encoding (gateway/encodings/ag_ui_encoder).
#include <boost/json/serialize.hpp>
#include <cctype>

#include "core/api_error.hpp"
#include "core/services/run_service.hpp"
#include "core/services/session_service.hpp"
#include "gateway/api/handlers.hpp"
#include "gateway/api/run_stream.hpp"
#include "gateway/app_context.hpp"
#include "gateway/auth/tenant_scope.hpp"
#include "gateway/encodings/ag_ui_encoder.hpp"
#include "gateway/encodings/shared_encoding.hpp"
#include "gateway/idempotency_header.hpp"
#include "gateway/request_body.hpp"

namespace agw::gateway::api {
namespace {

namespace json = boost::json;
using core::api_error;
using core::error_code;

// What the gateway takes from a RunAgentInput; the rest (state, context) is type-checked
// and not used: the session's checkpoint is the conversation.
struct run_agent_input {
  std::optional<std::string> thread_id;
  std::optional<std::string> run_id;
  std::string content;                                 // the newest user message's text: the run's input
  std::vector<core::client_tool_result> tool_results;  // or the client's tool results (front-end tools)
  std::vector<core::client_tool> tools;                // the client's tools, offered to the model for this run
  json::object session_body;                           // forwardedProps.session: a new session's POST /sessions body
};

// Bounds on what a client declares: the model sees every tool on every request.
constexpr std::size_t max_client_tools = 128;
constexpr std::size_t max_tool_name = 64;

const json::value* optional_member(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && !v->is_null() ? v : nullptr;
}

std::optional<std::string> optional_string(const json::object& o, std::string_view key) {
  const auto* v = optional_member(o, key);
  if (!v) return std::nullopt;
  if (!v->is_string() || v->get_string().empty())
    throw api_error(error_code::bad_request, std::string(key) + " must be a non-empty string");
  return std::string(v->get_string());
}

void require_array(const json::object& o, std::string_view key) {
  const auto* v = optional_member(o, key);
  if (v && !v->is_array()) throw api_error(error_code::bad_request, std::string(key) + " must be an array");
}

// A user message's text: a string, or the text parts of a content list joined.
std::string user_text(const json::value& content) {
  if (content.is_string()) return std::string(content.get_string());
  std::string out;
  if (!content.is_array())
    throw api_error(error_code::bad_request, "a user message's content must be a string or a list of parts");
  for (const auto& part : content.get_array()) {
    const auto* p = part.if_object();
    const auto* type = p ? p->if_contains("type") : nullptr;
    const auto* text = p ? p->if_contains("text") : nullptr;
    if (!type || !type->is_string() || type->get_string() != "text") continue;  // media parts: not supported yet
    if (!text || !text->is_string()) throw api_error(error_code::bad_request, "a text part needs a string text");
    if (!out.empty()) out += "\n";
    out += text->get_string();
  }
  return out;
}

// A tool name as the chat-completions API takes it: 1..64 of [A-Za-z0-9_-].
bool valid_tool_name(std::string_view name) {
  if (name.empty() || name.size() > max_tool_name) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

// RunAgentInput.tools: [{name, description, parameters}], names unique.
std::vector<core::client_tool> client_tools(const json::object& o) {
  std::vector<core::client_tool> out;
  const auto* v = optional_member(o, "tools");
  if (!v) return out;
  if (!v->is_array()) throw api_error(error_code::bad_request, "tools must be an array");
  if (v->get_array().size() > max_client_tools)
    throw api_error(error_code::bad_request, "tools may have at most " + std::to_string(max_client_tools) + " entries");
  for (const auto& entry : v->get_array()) {
    const auto* t = entry.if_object();
    if (!t) throw api_error(error_code::bad_request, "tools[] entries must be objects");
    core::client_tool tool;
    const auto* name = t->if_contains("name");
    if (!name || !name->is_string() || !valid_tool_name(name->get_string()))
      throw api_error(error_code::bad_request, "tools[].name must be 1 to 64 letters, digits, '_' or '-'");
    tool.name = name->get_string();
    if (core::find_client_tool(out, tool.name))
      throw api_error(error_code::bad_request, "tools[].name must be unique: " + tool.name + " is declared twice");
    if (const auto* d = optional_member(*t, "description")) {
      if (!d->is_string()) throw api_error(error_code::bad_request, "tools[].description must be a string");
      tool.description = d->get_string();
    }
    if (const auto* p = optional_member(*t, "parameters")) {
      if (!p->is_object()) throw api_error(error_code::bad_request, "tools[].parameters must be a JSON Schema object");
      tool.parameters = p->get_object();
    } else {
      tool.parameters = {{"type", "object"}, {"properties", json::object{}}};
    }
    out.push_back(std::move(tool));
  }
  return out;
}

// The conversation's trailing tool messages: the client's results for its tools' calls.
std::vector<core::client_tool_result> trailing_tool_results(const json::array& list) {
  std::vector<core::client_tool_result> out;
  std::size_t i = list.size();
  while (i > 0 && list[i - 1].get_object().at("role").get_string() == "tool") --i;
  for (; i < list.size(); ++i) {
    const auto& m = list[i].get_object();
    const auto* id = m.if_contains("toolCallId");
    const auto* content = m.if_contains("content");
    if (!id || !id->is_string() || id->get_string().empty())
      throw api_error(error_code::bad_request, "a tool message needs a non-empty string toolCallId");
    if (!content || !content->is_string()) throw api_error(error_code::bad_request, "a tool message needs a string content");
    out.push_back({std::string(id->get_string()), std::string(content->get_string())});
  }
  return out;
}

// The run's input: the conversation's last message, which must be the user's, or the
// client's tool results (then `in.tool_results` is set). Earlier messages are the
// client's copy of what the session's checkpoint already holds.
std::string newest_user_message(const json::object& o, run_agent_input& in) {
  const auto* messages = o.if_contains("messages");
  if (!messages || !messages->is_array()) throw api_error(error_code::bad_request, "messages must be an array");
  const auto& list = messages->get_array();
  for (const auto& m : list) {
    const auto* obj = m.if_object();
    const auto* role = obj ? obj->if_contains("role") : nullptr;
    if (!role || !role->is_string()) throw api_error(error_code::bad_request, "every message needs a string role");
  }
  if (list.empty()) throw api_error(error_code::bad_request, "messages must end with a user message");
  const auto& last = list.back().get_object();
  const auto role = last.at("role").get_string();
  if (role == "tool") {
    in.tool_results = trailing_tool_results(list);
    return {};
  }
  if (role != "user") throw api_error(error_code::bad_request, "messages must end with a user message");
  const auto* content = last.if_contains("content");
  auto text = content ? user_text(*content) : std::string();
  if (text.find_first_not_of(" \t\r\n\f\v") == std::string::npos)
    throw api_error(error_code::bad_request, "the last user message must have non-blank text");
  return text;
}

run_agent_input parse_run_agent_input(const request& req) {
  auto body = parse_json_body(req);
  if (!body.is_object()) throw api_error(error_code::bad_request, "request body must be a RunAgentInput JSON object");
  const auto& o = body.get_object();
  run_agent_input in;
  in.thread_id = optional_string(o, "threadId");
  in.run_id = optional_string(o, "runId");
  in.tools = client_tools(o);
  require_array(o, "context");
  in.content = newest_user_message(o, in);
  if (const auto* props = optional_member(o, "forwardedProps")) {
    if (!props->is_object()) throw api_error(error_code::bad_request, "forwardedProps must be an object");
    if (const auto* s = optional_member(props->get_object(), "session")) {
      if (!s->is_object()) throw api_error(error_code::bad_request, "forwardedProps.session must be an object");
      in.session_body = s->get_object();
    }
  }
  return in;
}

// The Idempotency-Key header; else the runId, so a client that re-sends the same run
// (same runId) attaches to it instead of starting another.
std::optional<std::string> idempotency_key(const request& req, const run_agent_input& in) {
  if (auto key = idempotency_key_header(req)) return key;
  if (in.run_id && valid_idempotency_key(*in.run_id)) return "ag-ui:" + *in.run_id;
  return std::nullopt;
}

void require_tenant(const request_context& ctx, const core::session_record& session) {
  if (!ctx.tenant) return;
  auto it = session.scopes.find("tenant");
  if (it == session.scopes.end() || it->second != *ctx.tenant) throw api_error(error_code::not_found, "no such session");
}

awaitable<handler_result> start_ag_ui_run(request_context& ctx, core::session_record session, run_agent_input in) {
  auto& app = ctx.app;
  require_tenant(ctx, session);
  if (app.draining) throw api_error(error_code::unavailable, "the server is draining; retry on another instance");
  core::start_request message{in.content, std::nullopt, idempotency_key(ctx.req, in)};
  message.request_id = ctx.request_id;
  message.client_tools = std::move(in.tools);
  message.tool_results = std::move(in.tool_results);
  const std::string session_id = session.id;
  auto starting = app.runs.start(std::move(session), std::move(message));
  auto started = co_await std::move(starting);
  stream_wire wire;
  // The events depend on the run and the ids RUN_STARTED names: one encoding for every
  // AG-UI stream of the run with the same runId (a re-sent run attaches to it).
  wire.make_encoder = [session_id, thread_run = in.run_id.value_or(started.run_id)](const std::string& run_id) {
    return shared_encoder("ag-ui\n" + session_id + "\n" + thread_run + "\n" + run_id,
                          [=] { return std::make_unique<ag_ui_encoder>(session_id, thread_run, run_id); });
  };
  wire.retry_line = false;
  co_return co_await stream_run(ctx, started.channel, session_id, started.run_id, started.after_id, std::move(wire));
}

}  // namespace

awaitable<handler_result> ag_ui_run_session(request_context& ctx) {
  core::session_service::check_id(ctx.param(0));
  auto finding = ctx.app.sessions.require(ctx.param(0));
  auto session = co_await std::move(finding);
  auto in = parse_run_agent_input(ctx.req);
  if (in.thread_id && *in.thread_id != session.id)
    throw api_error(error_code::bad_request, "threadId must be the session id of the path (or be left out)");
  co_return co_await start_ag_ui_run(ctx, std::move(session), std::move(in));
}

awaitable<handler_result> ag_ui_run(request_context& ctx) {
  auto in = parse_run_agent_input(ctx.req);
  if (!in.thread_id) throw api_error(error_code::bad_request, "threadId is required: it names the session");
  try {
    core::session_service::check_id(*in.thread_id);
  } catch (const api_error&) {
    throw api_error(error_code::bad_request, "threadId must be a UUID (it is the session id)");
  }
  if (!in.tool_results.empty()) {
    // Tool results answer an existing session's calls: for an unknown threadId they are
    // a 400 before the session would be created (bad input changes nothing).
    bool exists = true;
    try {
      auto requiring = ctx.app.sessions.require(*in.thread_id);
      co_await std::move(requiring);
    } catch (const api_error& e) {
      if (e.code() != error_code::not_found) throw;
      exists = false;
    }
    if (!exists) throw api_error(error_code::bad_request, "tool results answer pending tool calls, and this thread has none");
  }
  json::value body = in.session_body;
  if (ctx.tenant) auth::stamp_tenant(body, *ctx.tenant);
  auto finding = ctx.app.sessions.find_or_create(*in.thread_id, std::move(body));
  auto session = co_await std::move(finding);
  co_return co_await start_ag_ui_run(ctx, std::move(session), std::move(in));
}

}  // namespace agw::gateway::api
