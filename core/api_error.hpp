#pragma once
// The contract's error taxonomy. Handlers throw api_error for anything a client
// caused; the HTTP layer turns it into the status and
// {"error":{"code","message"}} body. Extra fields (run_id, stream_url) ride along.
#include <boost/json/object.hpp>
#include <stdexcept>
#include <string>

namespace agw::core {

enum class error_code {
  bad_request,
  unauthorized,
  not_found,
  method_not_allowed,
  run_in_progress,
  payload_too_large,
  unsupported_media_type,
  idempotency_mismatch,
  delivery_pending,  // 409: a redelivery of a webhook that is still pending
  too_many_requests,
  internal,
  unavailable,
};

int http_status(error_code code);
const char* code_name(error_code code);

class api_error : public std::runtime_error {
 public:
  api_error(error_code code, std::string message, boost::json::object extra = {})
      : std::runtime_error(std::move(message)), code_(code), extra_(std::move(extra)) {}
  error_code code() const { return code_; }
  const boost::json::object& extra() const { return extra_; }
  // {"error": {"code": ..., "message": ..., <extra>}}
  boost::json::object body() const;

 private:
  error_code code_;
  boost::json::object extra_;
};

}  // namespace agw::core
