#include "core/webhooks/callback_target.hpp"

#include <boost/url/parse.hpp>
#include <charconv>

namespace agw::core {

std::variant<callback_target, std::string> parse_callback_url(std::string_view url) {
  if (url.size() > max_callback_url_bytes)
    return "callback_url is longer than " + std::to_string(max_callback_url_bytes) + " bytes";
  auto parsed = boost::urls::parse_absolute_uri(url);
  if (!parsed) return std::string("callback_url must be an absolute http or https URL");
  const auto& u = *parsed;
  callback_target out;
  if (u.scheme_id() == boost::urls::scheme::https) out.https = true;
  else if (u.scheme_id() != boost::urls::scheme::http) return std::string("callback_url must use http or https");
  if (u.has_userinfo()) return std::string("callback_url must not carry credentials");
  if (u.has_fragment()) return std::string("callback_url must not have a fragment");
  switch (u.host_type()) {
    case boost::urls::host_type::name:
      out.host = u.encoded_host().decode();
      break;
    case boost::urls::host_type::ipv4:
      out.host = u.host_ipv4_address().to_string();
      out.host_is_address = true;
      break;
    case boost::urls::host_type::ipv6:
      out.host = u.host_ipv6_address().to_string();
      out.host_is_address = true;
      break;
    default:
      return std::string("callback_url must have a host name or an IP address");
  }
  if (out.host.empty()) return std::string("callback_url must have a host");
  for (auto& c : out.host) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == ':' || c == '_';
    if (!ok) return std::string("callback_url has an invalid host");
  }
  out.port = out.https ? 443 : 80;
  if (u.has_port()) {
    auto digits = u.port();
    unsigned value = 0;
    auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || err != std::errc() || end != digits.data() + digits.size() || value == 0 || value > 65535)
      return std::string("callback_url has an invalid port");
    out.port = static_cast<std::uint16_t>(value);
  }
  out.target = std::string(u.encoded_path());
  if (out.target.empty()) out.target = "/";
  if (u.has_query()) out.target += "?" + std::string(u.encoded_query());
  return out;
}

}  // namespace agw::core
