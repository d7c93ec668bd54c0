#pragma once
// Port: the sessions themselves (their rows, metadata and scopes labels).
// Implemented by every store (persistence/); used on a store connection's thread
// only (store_connection.hpp). Methods throw store_error on failure.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/session.hpp"
#include "core/session_request.hpp"

namespace agw::core {

class session_catalog {
 public:
  virtual ~session_catalog() = default;
  virtual void insert_session(const session_record& s) = 0;
  virtual std::optional<session_record> find_session(std::string_view id) = 0;
  virtual session_page list_sessions(const session_filter& filter) = 0;
  virtual bool update_session(const session_record& s) = 0;  // false: no such session
  virtual bool delete_session(std::string_view id) = 0;      // with everything it owns
  virtual std::vector<std::string> all_session_ids() = 0;
};

}  // namespace agw::core
