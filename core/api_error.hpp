#pragma once
// The contract's error taxonomy, as the domain sees it: services (and the request
// validation in core) throw api_error for anything a client caused. Which HTTP
// status each code becomes, and the {"error":{"code","message"}} body, belong to
// the gateway (gateway/error_status.hpp). Extra fields (run_id, stream_url) ride along.
// The class keeps its name (not domain_error): a rename would touch frozen code
// (core/agents, core/session_request) and their tests for no change in behaviour.
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
  delivery_pending,  // a redelivery of a webhook that is still pending
  too_many_requests,
  request_header_fields_too_large,  // the request's header block is over the limit (431)
  internal,
  unavailable,
};

// The contract's code string ("not_found", ...).
const char* code_name(error_code code);

class api_error : public std::runtime_error {
 public:
  api_error(error_code code, std::string message, boost::json::object extra = {})
      : std::runtime_error(std::move(message)), code_(code), extra_(std::move(extra)) {}
  error_code code() const { return code_; }
  // Fields the error body carries besides code and message.
  const boost::json::object& extra() const { return extra_; }

 private:
  error_code code_;
  boost::json::object extra_;
};

}  // namespace agw::core
