#include "core/webhooks/callback_target.hpp"

namespace agw::core {

std::variant<callback_target, std::string> parse_callback_url(std::string_view url) {
  if (url.size() > max_callback_url_bytes)
    return "callback_url is longer than " + std::to_string(max_callback_url_bytes) + " bytes";
  return parse_http_url(url, "callback_url");
}

}  // namespace agw::core
