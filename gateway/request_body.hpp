#pragma once
// Checks and parses a JSON request body: 415 for another media type, 400 for
// malformed JSON or invalid UTF-8 (Boost.JSON validates both).
#include <boost/json/value.hpp>

#include "gateway/http_types.hpp"

namespace agw::gateway {

boost::json::value parse_json_body(const request& req);
// An empty body is allowed (and yields an empty object) where every field is optional.
boost::json::value parse_optional_json_body(const request& req);

}  // namespace agw::gateway
