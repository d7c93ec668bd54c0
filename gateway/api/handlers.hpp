#pragma once
// The API's request handlers, one file per resource under gateway/api/.
#include "gateway/router.hpp"

namespace agw::gateway::api {

awaitable<handler_result> healthz(request_context& ctx);
awaitable<handler_result> readyz(request_context& ctx);
awaitable<handler_result> metrics_text(request_context& ctx);

// GET/HEAD /: the browser page (gateway/web/index.html).
awaitable<handler_result> index_page(request_context& ctx);

awaitable<handler_result> create_session(request_context& ctx);
awaitable<handler_result> list_sessions(request_context& ctx);
awaitable<handler_result> get_session(request_context& ctx);
awaitable<handler_result> patch_session(request_context& ctx);
awaitable<handler_result> delete_session(request_context& ctx);
// GET/PATCH /sessions/{id}/state (gateway/api/state_handlers.cpp): the merged state scopes.
awaitable<handler_result> get_session_state(request_context& ctx);
awaitable<handler_result> patch_session_state(request_context& ctx);

awaitable<handler_result> post_message(request_context& ctx);
awaitable<handler_result> list_messages(request_context& ctx);
awaitable<handler_result> abort_run(request_context& ctx);
awaitable<handler_result> rebuild_messages(request_context& ctx);
awaitable<handler_result> session_events(request_context& ctx);
// HEAD of the above: headers only, no stream.
awaitable<handler_result> session_events_head(request_context& ctx);
// The session timeline (docs/timeline.md): POST /sessions/{id}/events appends a custom
// event; POST /sessions/{id}/operator-messages stores and delivers an operator's answer.
awaitable<handler_result> post_custom_event(request_context& ctx);
awaitable<handler_result> post_operator_message(request_context& ctx);
// POST /sessions/{id}/stream-token: a short-lived token for ?token= on that session's /events.
awaitable<handler_result> issue_stream_token(request_context& ctx);

// AG-UI (gateway/api/ag_ui_handlers.cpp): POST /ag-ui/{id}, and POST /ag-ui (threadId names the session).
awaitable<handler_result> ag_ui_run_session(request_context& ctx);
awaitable<handler_result> ag_ui_run(request_context& ctx);
// The AI SDK's useChat: POST /sessions/{id}/chat starts a run answered as a UI message
// stream; GET /sessions/{id}/chat/stream resumes the live one (204 when none).
awaitable<handler_result> post_chat(request_context& ctx);
awaitable<handler_result> resume_chat_stream(request_context& ctx);

awaitable<handler_result> list_webhooks(request_context& ctx);
awaitable<handler_result> redeliver_webhook(request_context& ctx);

}  // namespace agw::gateway::api
