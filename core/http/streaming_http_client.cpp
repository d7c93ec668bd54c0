#include "core/http/streaming_http_client.hpp"

#include <algorithm>

namespace agw::core {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
           return lower(x) == lower(y);
         });
}

class streaming_http_category_impl final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "streaming_http"; }
  std::string message(int value) const override {
    switch (static_cast<streaming_http_errc>(value)) {
      case streaming_http_errc::bad_url:
        return "bad URL";
      case streaming_http_errc::resolve_failed:
        return "could not resolve the host";
      case streaming_http_errc::connect_failed:
        return "could not connect";
      case streaming_http_errc::tls_failed:
        return "TLS handshake failed";
      case streaming_http_errc::connect_timeout:
        return "connect timed out";
      case streaming_http_errc::idle_timeout:
        return "no data within the idle timeout";
      case streaming_http_errc::cancelled:
        return "cancelled";
      case streaming_http_errc::connection_lost:
        return "connection closed before the response was complete";
      case streaming_http_errc::protocol_error:
        return "invalid HTTP response";
      case streaming_http_errc::misuse:
        return "operation out of order";
    }
    return "unknown streaming_http error";
  }
};

}  // namespace

const boost::system::error_category& streaming_http_category() {
  static const streaming_http_category_impl category;
  return category;
}

const std::string* streaming_response_head::find(std::string_view name) const {
  for (const auto& [n, v] : headers)
    if (iequals(n, name)) return &v;
  return nullptr;
}

}  // namespace agw::core
