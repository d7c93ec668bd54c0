#include "core/api_error.hpp"

namespace agw::core {

const char* code_name(error_code code) {
  switch (code) {
    case error_code::bad_request:
      return "bad_request";
    case error_code::unauthorized:
      return "unauthorized";
    case error_code::not_found:
      return "not_found";
    case error_code::method_not_allowed:
      return "method_not_allowed";
    case error_code::run_in_progress:
      return "run_in_progress";
    case error_code::payload_too_large:
      return "payload_too_large";
    case error_code::unsupported_media_type:
      return "unsupported_media_type";
    case error_code::idempotency_mismatch:
      return "idempotency_mismatch";
    case error_code::delivery_pending:
      return "delivery_pending";
    case error_code::too_many_requests:
      return "too_many_requests";
    case error_code::request_header_fields_too_large:
      return "request_header_fields_too_large";
    case error_code::internal:
      return "internal";
    case error_code::unavailable:
      return "unavailable";
  }
  return "internal";
}

}  // namespace agw::core
