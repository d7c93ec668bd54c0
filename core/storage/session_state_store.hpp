#pragma once
// Port: the persisted state scopes (docs/sessions.md, "State"): 'session' keys owned
// by one session (deleted with it), 'user' keys owned by a tenant's user, 'app' keys
// owned by a tenant. temp: keys never reach a store. Values are JSON text.
// Used on a store connection's thread only (store_connection.hpp); throws store_error.
#include <map>
#include <string>
#include <string_view>

namespace agw::core {

class session_state_store {
 public:
  virtual ~session_state_store() = default;
  // Every key of one owner, key -> JSON text.
  virtual std::map<std::string, std::string> read_state(std::string_view scope, std::string_view owner) = 0;
  virtual void put_state(std::string_view scope, std::string_view owner, std::string_view key, std::string_view value,
                         std::int64_t at_ms) = 0;
  virtual void delete_state(std::string_view scope, std::string_view owner, std::string_view key) = 0;
};

}  // namespace agw::core
