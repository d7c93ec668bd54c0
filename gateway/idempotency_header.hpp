#pragma once
// The Idempotency-Key request header, checked once for every route that starts a run
// (POST /messages, /chat, /ag-ui): 1 to 255 printable ASCII characters, else a 400.
#include <optional>
#include <string>

#include "gateway/http_types.hpp"

namespace agw::gateway {

// nullopt when the header is absent; throws api_error(bad_request) when it is not a valid key.
std::optional<std::string> idempotency_key_header(const request& req);

// The same rule for a key that comes from elsewhere (AG-UI's runId).
bool valid_idempotency_key(std::string_view key);

}  // namespace agw::gateway
