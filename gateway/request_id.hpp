#pragma once
// X-Request-Id: the id every access line, run line and response carries. A client's
// own id is kept when it is sane (1..128 characters of [A-Za-z0-9._:-], so it can
// neither forge a log line nor smuggle a header); otherwise one is made.
#include <string>
#include <string_view>

#include "gateway/http_types.hpp"

namespace agw::gateway {

inline constexpr std::size_t max_request_id_length = 128;

bool sane_request_id(std::string_view id);
// 16 random hex digits.
std::string new_request_id();
// The request's X-Request-Id when sane (and given once), else a new one.
std::string request_id_for(const request& req);

}  // namespace agw::gateway
