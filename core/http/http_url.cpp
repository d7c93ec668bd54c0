#include "core/http/http_url.hpp"

#include <boost/url/parse.hpp>
#include <charconv>

namespace agw::core {

std::variant<http_url, std::string> parse_http_url(std::string_view url, std::string_view what) {
  const std::string name(what);
  auto parsed = boost::urls::parse_absolute_uri(url);
  if (!parsed) return name + " must be an absolute http or https URL";
  const auto& u = *parsed;
  http_url out;
  if (u.scheme_id() == boost::urls::scheme::https)
    out.https = true;
  else if (u.scheme_id() != boost::urls::scheme::http)
    return name + " must use http or https";
  if (u.has_userinfo()) return name + " must not carry credentials";
  if (u.has_fragment()) return name + " must not have a fragment";
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
      return name + " must have a host name or an IP address";
  }
  if (out.host.empty()) return name + " must have a host";
  for (auto& c : out.host) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == ':' || c == '_';
    if (!ok) return name + " has an invalid host";
  }
  out.port = out.https ? 443 : 80;
  if (u.has_port()) {
    auto digits = u.port();
    unsigned value = 0;
    auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || err != std::errc() || end != digits.data() + digits.size() || value == 0 || value > 65535)
      return name + " has an invalid port";
    out.port = static_cast<std::uint16_t>(value);
  }
  out.target = std::string(u.encoded_path());
  if (out.target.empty()) out.target = "/";
  if (u.has_query()) out.target += "?" + std::string(u.encoded_query());
  return out;
}

std::string host_header(const http_url& u) {
  std::string host = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  const bool default_port = (u.https && u.port == 443) || (!u.https && u.port == 80);
  return default_port ? host : host + ":" + std::to_string(u.port);
}

}  // namespace agw::core
