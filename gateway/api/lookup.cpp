#include "gateway/api/lookup.hpp"

#include <boost/asio/use_awaitable.hpp>

#include "core/api_error.hpp"
#include "core/ids.hpp"
#include "core/session_hub.hpp"
#include "gateway/app_context.hpp"

namespace agw::gateway::api {

awaitable<core::session_record> find_session_or_404(app_context& app, const std::string& id) {
  // Ids are UUIDs: anything else cannot exist, and never reaches storage.
  if (!core::is_uuid(id)) throw core::api_error(core::error_code::not_found, "no such session");
  auto find = [id](core::store_connection& c) { return c.find_session(id); };
  auto s = co_await app.store.async_read(std::move(find), net::use_awaitable);
  if (!s) throw core::api_error(core::error_code::not_found, "no such session");
  co_return std::move(*s);
}

boost::json::object session_json(app_context& app, const core::session_record& s) {
  auto live = app.hub.live_state(s.id);
  core::session_record shown = s;
  shown.last_event_id = std::max(s.last_event_id, live.last_event_id);
  return core::to_json(shown, live.run);
}

}  // namespace agw::gateway::api
