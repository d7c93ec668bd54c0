// sqlite_store's state scopes: the session_state table of migration 6.
#include "persistence/sqlite_store.hpp"

namespace agw::persistence {

std::map<std::string, std::string> sqlite_store::read_state(std::string_view scope, std::string_view owner) {
  std::map<std::string, std::string> out;
  auto st = db_.prepare("SELECT key, value FROM session_state WHERE scope = ? AND owner = ?");
  st.bind(1, scope).bind(2, owner);
  while (st.step()) out.emplace(st.text(0), st.text(1));
  return out;
}

void sqlite_store::put_state(std::string_view scope, std::string_view owner, std::string_view key, std::string_view value,
                             std::int64_t at_ms) {
  db_.prepare(
         "INSERT INTO session_state (scope, owner, key, value, updated_at) VALUES (?, ?, ?, ?, ?) "
         "ON CONFLICT (scope, owner, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at")
      .bind(1, scope)
      .bind(2, owner)
      .bind(3, key)
      .bind(4, value)
      .bind(5, at_ms)
      .run();
}

void sqlite_store::delete_state(std::string_view scope, std::string_view owner, std::string_view key) {
  db_.prepare("DELETE FROM session_state WHERE scope = ? AND owner = ? AND key = ?")
      .bind(1, scope)
      .bind(2, owner)
      .bind(3, key)
      .run();
}

}  // namespace agw::persistence
