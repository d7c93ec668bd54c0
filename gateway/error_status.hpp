#pragma once
// How the domain's errors look on the wire: each core::error_code's HTTP status
// and the contract's error body. Used where exceptions become responses (the
// router, the connection's own refusals). Pure functions, any thread.
#include <boost/json/object.hpp>

#include "core/api_error.hpp"
#include "gateway/http_types.hpp"

namespace agw::gateway {

http::status http_status(core::error_code code);

// {"error": {"code": ..., "message": ..., <extra>}}
boost::json::object error_body(const core::api_error& error);

}  // namespace agw::gateway
