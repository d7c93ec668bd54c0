#include "core/services/session_service.hpp"

#include <algorithm>
#include <boost/asio/use_awaitable.hpp>

#include "core/agents/agent_environment.hpp"
#include "core/api_error.hpp"
#include "core/clock.hpp"
#include "core/ids.hpp"
#include "core/session_hub.hpp"
#include "core/store_executor.hpp"

namespace agw::core {

namespace net = boost::asio;

session_service::session_service(store_executor& store, session_hub& hub, const clock& time)
    : store_(store), hub_(hub), clock_(time) {}

std::optional<std::int64_t> expiry_of(const session_record& s, std::int64_t default_ttl_ms) {
  const std::int64_t ttl_ms = s.ttl_seconds ? *s.ttl_seconds * 1000 : default_ttl_ms;
  if (ttl_ms <= 0) return std::nullopt;
  return std::max(s.active_at_ms, s.created_at_ms) + ttl_ms;
}

void session_service::prepare_new(session_record& s) const {
  s.created_at_ms = s.updated_at_ms = s.active_at_ms = clock_.wall_ms();
  // A profile's labels join the client's (docs/sessions.md: agent_name is fixed at create,
  // so every run of the session is that profile's).
  if (auto profile = current_agent_environment()->profile(s.agent_name)) {
    for (const auto& l : profile->labels) s.labels.insert(l);
    if (!s.event_webhook_url && !profile->event_webhook_url.empty()) s.event_webhook_url = profile->event_webhook_url;
    if (s.labels.size() > session_limits::max_labels)
      throw api_error(error_code::bad_request,
                      "labels and the agent profile's labels together exceed " + std::to_string(session_limits::max_labels));
  }
}

void session_service::check_id(const std::string& id) {
  if (!is_uuid(id)) throw api_error(error_code::not_found, "no such session");
}

net::awaitable<session_view> session_service::create(boost::json::value body) {
  auto s = parse_session_create(body);
  s.id = new_uuid();
  s.thread_id = new_uuid();
  prepare_new(s);
  auto insert = [s](store_connection& c) { c.insert_session(s); };
  co_await store_.async_write(std::move(insert), net::use_awaitable);
  // A new session has no channel yet: nothing live to merge.
  s.expires_at_ms = expiry_of(s, default_ttl_ms_);
  co_return session_view{std::move(s), std::nullopt};
}

net::awaitable<session_record> session_service::find_or_create(std::string id, boost::json::value body) {
  check_id(id);
  auto s = parse_session_create(body);
  s.id = id;
  s.thread_id = new_uuid();
  prepare_new(s);
  // Before the store is asked: a channel made from this row learns of later drops.
  const std::uint64_t epoch = hub_.epoch();
  // Looked up and inserted in one write job: two requests for a new id make one session.
  auto find_or_insert = [s](store_connection& c) {
    if (auto found = c.find_session(s.id)) return *found;
    c.insert_session(s);
    return s;
  };
  auto found = co_await store_.async_write(std::move(find_or_insert), net::use_awaitable);
  found.read_epoch = epoch;
  co_return found;
}

net::awaitable<session_list> session_service::list(session_filter filter) {
  auto read = [filter](store_connection& c) { return c.list_sessions(filter); };
  auto page = co_await store_.async_read(std::move(read), net::use_awaitable);
  session_list out;
  out.total = page.total;
  out.sessions.reserve(page.sessions.size());
  for (auto& s : page.sessions) out.sessions.push_back(with_live_state(std::move(s)));
  co_return out;
}

net::awaitable<session_view> session_service::get(std::string id) {
  auto finding = require(std::move(id));
  auto s = co_await std::move(finding);
  co_return with_live_state(std::move(s));
}

net::awaitable<session_view> session_service::patch(std::string id, boost::json::value body) {
  check_id(id);
  // Validate before touching storage, then apply to the current row inside the write
  // transaction so concurrent PATCHes of different fields do not undo each other.
  session_record probe;
  apply_session_patch(body, probe);
  auto apply = [id, body, &time = clock_](store_connection& c) -> std::optional<session_record> {
    auto s = c.find_session(id);
    if (!s) return std::nullopt;
    apply_session_patch(body, *s);
    s->updated_at_ms = time.wall_ms();
    s->active_at_ms = std::max(s->active_at_ms, s->updated_at_ms);  // a PATCH is activity (the TTL's)
    c.update_session(*s);
    return s;
  };
  auto updated = co_await store_.async_write(std::move(apply), net::use_awaitable);
  if (!updated) throw api_error(error_code::not_found, "no such session");
  co_return with_live_state(std::move(*updated));
}

net::awaitable<void> session_service::remove(std::string id) {
  check_id(id);
  // The deleted session's thread id tells its records from a session made again with this id.
  auto erase = [id](store_connection& c) -> std::optional<std::string> {
    auto s = c.find_session(id);
    if (!s || !c.delete_session(id)) return std::nullopt;
    return s->thread_id;
  };
  const auto deleted = co_await store_.async_write(std::move(erase), net::use_awaitable);
  if (!deleted) throw api_error(error_code::not_found, "no such session");
  // Rows first, then the live side: a run still going ends unstored, its followers are closed.
  hub_.session_deleted(id, *deleted);
}

net::awaitable<session_record> session_service::require(std::string id) {
  check_id(id);
  // Before the store is asked: a channel made from this row learns of later drops.
  const std::uint64_t epoch = hub_.epoch();
  auto find = [id](store_connection& c) { return c.find_session(id); };
  auto s = co_await store_.async_read(std::move(find), net::use_awaitable);
  if (!s) throw api_error(error_code::not_found, "no such session");
  s->read_epoch = epoch;
  co_return std::move(*s);
}

session_view session_service::with_live_state(session_record s) const {
  auto live = hub_.live_state(s.id);
  s.expires_at_ms = expiry_of(s, default_ttl_ms_);
  s.last_event_id = std::max(s.last_event_id, live.last_event_id);
  return session_view{std::move(s), std::move(live.run)};
}

}  // namespace agw::core
