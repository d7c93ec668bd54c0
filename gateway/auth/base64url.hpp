#pragma once
// base64url without padding (RFC 4648 §5), over OpenSSL's base64: the alphabet
// a token needs to travel unescaped in a query string.
#include <optional>
#include <string>
#include <string_view>

namespace agw::gateway::auth {

std::string base64url_encode(std::string_view bytes);
// nullopt for anything that is not canonical unpadded base64url.
std::optional<std::string> base64url_decode(std::string_view text);

}  // namespace agw::gateway::auth
