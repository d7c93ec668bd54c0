#include "gateway/api/handlers.hpp"
#include "gateway/app_context.hpp"

namespace agw::gateway {

void register_routes(app_context& app) {
  auto& r = app.routes;
  using http::verb;
  r.add(verb::get, "/healthz", api::healthz);
  r.add(verb::get, "/readyz", api::readyz);
  r.add(verb::get, "/metrics", api::metrics_text);
  r.add(verb::get, "/", api::index_page);
  r.add(verb::head, "/", api::index_page);
  r.add(verb::post, "/sessions", api::create_session);
  r.add(verb::get, "/sessions", api::list_sessions);
  r.add(verb::get, "/sessions/{}", api::get_session);
  r.add(verb::patch, "/sessions/{}", api::patch_session);
  r.add(verb::delete_, "/sessions/{}", api::delete_session);
  r.add(verb::get, "/sessions/{}/state", api::get_session_state);
  r.add(verb::patch, "/sessions/{}/state", api::patch_session_state);
  r.add(verb::post, "/sessions/{}/messages", api::post_message);
  r.add(verb::get, "/sessions/{}/messages", api::list_messages);
  r.add(verb::post, "/sessions/{}/abort", api::abort_run);
  r.add(verb::post, "/sessions/{}/rebuild", api::rebuild_messages);
  r.add(verb::get, "/sessions/{}/events", api::session_events);
  r.add(verb::head, "/sessions/{}/events", api::session_events_head);
  r.add(verb::post, "/sessions/{}/events", api::post_custom_event);
  r.add(verb::post, "/sessions/{}/operator-messages", api::post_operator_message);
  r.add(verb::post, "/sessions/{}/stream-token", api::issue_stream_token);
  r.add(verb::post, "/sessions/{}/chat", api::post_chat);
  r.add(verb::get, "/sessions/{}/chat/stream", api::resume_chat_stream);
  r.add(verb::get, "/sessions/{}/webhooks", api::list_webhooks);
  r.add(verb::post, "/sessions/{}/webhooks/{}/redeliver", api::redeliver_webhook);
  r.add(verb::post, "/ag-ui", api::ag_ui_run);
  r.add(verb::post, "/ag-ui/{}", api::ag_ui_run_session);
}

}  // namespace agw::gateway
