#include "core/services/state_service.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>

#include "core/api_error.hpp"
#include "core/clock.hpp"
#include "core/services/session_service.hpp"
#include "core/session_hub.hpp"
#include "core/session_state.hpp"
#include "core/store_executor.hpp"

namespace agw::core {

namespace net = boost::asio;

namespace {

constexpr state_scope persisted_scopes[] = {state_scope::session, state_scope::user, state_scope::app};

// Every persisted key the session sees, prefixed as the API shows it.
boost::json::object read_persisted(store_connection& c, const session_record& s) {
  boost::json::object out;
  for (auto scope : persisted_scopes) {
    auto owner = state_owner(scope, s);
    if (!owner) continue;
    for (auto& [name, value] : c.read_state(scope_column(scope), *owner))
      out[state_key_text(scope, name)] = boost::json::parse(value);
  }
  return out;
}

std::string live_run_id(const session_hub& hub, const std::string& session_id) {
  auto live = hub.live_state(session_id);
  return live.run ? live.run->id : std::string();
}

}  // namespace

state_service::state_service(store_executor& store, session_service& sessions, session_hub& hub, const clock& time)
    : store_(store), sessions_(sessions), hub_(hub), clock_(time) {}

boost::json::object state_service::live_temp(const std::string& session_id) {
  const auto run_id = live_run_id(hub_, session_id);
  std::lock_guard lock(mutex_);
  auto it = temp_.find(session_id);
  if (it == temp_.end()) return {};
  if (it->second.run_id != run_id) {
    temp_.erase(it);  // its run ended: the values went with it
    return {};
  }
  return it->second.values;
}

net::awaitable<boost::json::object> state_service::get(std::string id) {
  auto finding = sessions_.require(id);
  auto session = co_await std::move(finding);
  auto read = [session](store_connection& c) { return read_persisted(c, session); };
  auto state = co_await store_.async_read(std::move(read), net::use_awaitable);
  for (auto& [name, value] : live_temp(id)) state[state_key_text(state_scope::temp, std::string(name))] = value;
  co_return boost::json::object{{"state", std::move(state)}};
}

net::awaitable<boost::json::object> state_service::patch(std::string id, boost::json::value body) {
  auto finding = sessions_.require(id);
  auto session = co_await std::move(finding);
  // The whole body is checked before anything is written.
  auto changes = parse_state_patch(body, session);
  std::vector<state_change> temp_changes;
  for (const auto& ch : changes)
    if (ch.key.scope == state_scope::temp) temp_changes.push_back(ch);
  const auto run_id = temp_changes.empty() ? std::string() : live_run_id(hub_, id);
  if (!temp_changes.empty() && run_id.empty())
    throw api_error(error_code::bad_request, "temp: keys belong to the session's live run, and none is live");
  if (!temp_changes.empty()) {
    auto held = live_temp(id);
    for (const auto& ch : temp_changes) ch.value ? (void)(held[ch.key.name] = nullptr) : (void)held.erase(ch.key.name);
    if (held.size() > state_limits::max_keys_per_owner)
      throw api_error(error_code::bad_request,
                      "temp state may hold at most " + std::to_string(state_limits::max_keys_per_owner) + " keys");
    std::lock_guard lock(mutex_);
    // Entries are dropped when their session is read after its run ended; sessions never
    // read again (deleted, expired, idle) are dropped here, once the table is full.
    if (!temp_.count(id) && temp_.size() >= max_temp_sessions)
      std::erase_if(temp_, [this](const auto& entry) { return live_run_id(hub_, entry.first) != entry.second.run_id; });
    if (!temp_.count(id) && temp_.size() >= max_temp_sessions)
      throw api_error(error_code::unavailable, "too many sessions hold temp: state; retry later");
  }
  auto apply = [session, changes, &time = clock_](store_connection& c) -> std::optional<boost::json::object> {
    auto current = c.find_session(session.id);
    if (!current) return std::nullopt;
    for (const auto& ch : changes) {
      if (ch.key.scope == state_scope::temp) continue;
      const auto owner = *state_owner(ch.key.scope, *current);
      const char* scope = scope_column(ch.key.scope);
      if (ch.value)
        c.put_state(scope, owner, ch.key.name, *ch.value, time.wall_ms());
      else
        c.delete_state(scope, owner, ch.key.name);
    }
    for (auto scope : persisted_scopes) {
      auto owner = state_owner(scope, *current);
      if (owner && c.read_state(scope_column(scope), *owner).size() > state_limits::max_keys_per_owner)
        // Thrown inside the job: its savepoint is rolled back, nothing of the PATCH stays.
        throw api_error(error_code::bad_request, std::string(scope_column(scope)) + " state may hold at most " +
                                                     std::to_string(state_limits::max_keys_per_owner) + " keys");
    }
    // Writing state is activity (the TTL counts from it).
    current->updated_at_ms = time.wall_ms();
    c.update_session(*current);
    return read_persisted(c, *current);
  };
  auto written = co_await store_.async_write(std::move(apply), net::use_awaitable);
  if (!written) throw api_error(error_code::not_found, "no such session");
  if (!temp_changes.empty()) {
    std::lock_guard lock(mutex_);
    auto& entry = temp_[id];
    if (entry.run_id != run_id) entry = temp_entry{run_id, {}};
    for (const auto& ch : temp_changes) {
      if (ch.value)
        entry.values[ch.key.name] = boost::json::parse(*ch.value);
      else
        entry.values.erase(ch.key.name);
    }
  }
  for (auto& [name, value] : live_temp(id)) (*written)[state_key_text(state_scope::temp, std::string(name))] = value;
  co_return boost::json::object{{"state", std::move(*written)}};
}

}  // namespace agw::core
