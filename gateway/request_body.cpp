#include "gateway/request_body.hpp"

#include <boost/algorithm/string/predicate.hpp>
#include <boost/algorithm/string/trim.hpp>
#include <boost/json/parser.hpp>

#include "core/api_error.hpp"

namespace agw::gateway {
namespace {

void require_json_media_type(const request& req) {
  auto it = req.find(http::field::content_type);
  if (it == req.end())
    throw core::api_error(core::error_code::unsupported_media_type, "Content-Type must be application/json");
  std::string_view value = it->value();
  auto semicolon = value.find(';');
  std::string media(value.substr(0, semicolon));
  boost::algorithm::trim(media);
  if (!boost::algorithm::iequals(media, "application/json"))
    throw core::api_error(core::error_code::unsupported_media_type, "Content-Type must be application/json");
  if (semicolon != std::string_view::npos) {
    std::string params(value.substr(semicolon + 1));
    boost::algorithm::trim(params);
    if (boost::algorithm::istarts_with(params, "charset=")) {
      std::string charset = params.substr(8);
      boost::algorithm::trim_if(charset, [](char c) { return c == '"' || c == ' '; });
      if (!boost::algorithm::iequals(charset, "utf-8"))
        throw core::api_error(core::error_code::unsupported_media_type, "JSON bodies must be UTF-8");
    }
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
  return parser.release();
}

boost::json::value parse_optional_json_body(const request& req) {
  if (req.body().empty() && req.find(http::field::content_type) == req.end()) return boost::json::object{};
  return parse_json_body(req);
}

}  // namespace agw::gateway
