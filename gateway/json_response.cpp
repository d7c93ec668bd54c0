#include "gateway/json_response.hpp"

#include <boost/json/serialize.hpp>

#include "gateway/error_status.hpp"

namespace agw::gateway {

response json_response(http::status status, const boost::json::value& body, unsigned version) {
  response res{status, version};
  res.set(http::field::content_type, "application/json; charset=utf-8");
  res.set(http::field::cache_control, "no-store");
  res.body() = boost::json::serialize(body);
  res.prepare_payload();
  return res;
}

response error_response(const core::api_error& error, unsigned version) {
  return json_response(http_status(error.code()), error_body(error), version);
}

response empty_response(http::status status, unsigned version) {
  response res{status, version};
  res.prepare_payload();
  return res;
}

}  // namespace agw::gateway
