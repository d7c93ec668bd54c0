#include "gateway/error_status.hpp"

namespace agw::gateway {

http::status http_status(core::error_code code) {
  using core::error_code;
  switch (code) {
    case error_code::bad_request:
      return http::status::bad_request;
    case error_code::unauthorized:
      return http::status::unauthorized;
    case error_code::not_found:
      return http::status::not_found;
    case error_code::method_not_allowed:
      return http::status::method_not_allowed;
    case error_code::run_in_progress:
      return http::status::conflict;
    case error_code::payload_too_large:
      return http::status::payload_too_large;
    case error_code::unsupported_media_type:
      return http::status::unsupported_media_type;
    case error_code::idempotency_mismatch:
      return http::status::unprocessable_entity;
    case error_code::delivery_pending:
      return http::status::conflict;
    case error_code::too_many_requests:
      return http::status::too_many_requests;
    case error_code::request_header_fields_too_large:
      return http::status::request_header_fields_too_large;
    case error_code::internal:
      return http::status::internal_server_error;
    case error_code::unavailable:
      return http::status::service_unavailable;
  }
  return http::status::internal_server_error;
}

boost::json::object error_body(const core::api_error& error) {
  boost::json::object fields{{"code", core::code_name(error.code())}, {"message", error.what()}};
  for (const auto& [k, v] : error.extra()) fields[k] = v;
  boost::json::object body;
  body["error"] = std::move(fields);
  return body;
}

}  // namespace agw::gateway
