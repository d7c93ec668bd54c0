#include "gateway/request_body.hpp"

#include <boost/algorithm/string/predicate.hpp>
#include <boost/algorithm/string/trim.hpp>
#include <boost/json/parser.hpp>
#include <cmath>

#include "core/api_error.hpp"

namespace agw::gateway {
namespace {

void require_json_media_type(const request& req) {
  auto it = req.find(http::field::content_type);
  if (it == req.end()) throw core::api_error(core::error_code::unsupported_media_type, "Content-Type must be application/json");
  std::string_view value = it->value();
  auto semicolon = value.find(';');
  std::string media(value.substr(0, semicolon));
  boost::algorithm::trim(media);
  if (!boost::algorithm::iequals(media, "application/json"))
    throw core::api_error(core::error_code::unsupported_media_type, "Content-Type must be application/json");
  // Every parameter is looked at: a charset may come after others.
  std::string_view params = semicolon == std::string_view::npos ? std::string_view() : value.substr(semicolon + 1);
  while (!params.empty()) {
    auto next = params.find(';');
    std::string param(params.substr(0, next));
    params = next == std::string_view::npos ? std::string_view() : params.substr(next + 1);
    boost::algorithm::trim(param);
    if (!boost::algorithm::istarts_with(param, "charset=")) continue;
    std::string charset = param.substr(8);
    boost::algorithm::trim_if(charset, [](char c) { return c == '"' || c == ' '; });
    if (!boost::algorithm::iequals(charset, "utf-8"))
      throw core::api_error(core::error_code::unsupported_media_type, "JSON bodies must be UTF-8");
  }
}

// JSON has no Infinity or NaN; Boost.JSON turns 1e999 into one, which could never be written back.
void reject_non_finite(const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::double_:
      if (!std::isfinite(v.get_double())) throw core::api_error(core::error_code::bad_request, "number out of range");
      break;
    case boost::json::kind::array:
      for (const auto& e : v.get_array()) reject_non_finite(e);
      break;
    case boost::json::kind::object:
      for (const auto& [k, e] : v.get_object()) reject_non_finite(e);
      break;
    default:
      break;
  }
}

}  // namespace

boost::json::value parse_json_body(const request& req) {
  require_json_media_type(req);
  boost::json::parse_options options;
  options.max_depth = 64;
  boost::json::parser parser({}, options);
  boost::system::error_code ec;
  // write() requires one complete value: truncated JSON and trailing bytes are errors.
  parser.write(req.body(), ec);
  if (ec) throw core::api_error(core::error_code::bad_request, "malformed JSON body: " + ec.message());
  auto value = parser.release();
  reject_non_finite(value);  // depth is bounded by max_depth above
  return value;
}

boost::json::value parse_optional_json_body(const request& req) {
  if (req.body().empty() && req.find(http::field::content_type) == req.end()) return boost::json::object{};
  return parse_json_body(req);
}

}  // namespace agw::gateway
