#pragma once
// Building JSON responses and the contract's error bodies.
#include <boost/json/value.hpp>

#include "core/api_error.hpp"
#include "gateway/http_types.hpp"

namespace agw::gateway {

response json_response(http::status status, const boost::json::value& body, unsigned version = 11);
response error_response(const core::api_error& error, unsigned version = 11);
response empty_response(http::status status, unsigned version = 11);

}  // namespace agw::gateway
