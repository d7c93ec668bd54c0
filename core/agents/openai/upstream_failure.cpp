#include "core/agents/openai/upstream_failure.hpp"

#include <boost/json/parse.hpp>
#include <charconv>

#include "core/http/streaming_http_client.hpp"

namespace agw::core::openai {

namespace json = boost::json;

upstream_failure transport_failure(const boost::system::error_code& ec, const std::string& detail, bool during_body) {
  using e = streaming_http_errc;
  const auto what = static_cast<e>(ec.value());
  if (ec.category() != streaming_http_category()) return {"upstream_error", detail, false, {}};
  switch (what) {
    case e::idle_timeout:
      return {"upstream_timeout", "the upstream sent nothing within the idle timeout (" + detail + ")", !during_body, {}};
    case e::protocol_error:
      return {"upstream_protocol", "the upstream's response is not valid HTTP (" + detail + ")", false, {}};
    case e::connection_lost:
      if (during_body)
        return {"upstream_incomplete", "the upstream closed the stream before it was complete (" + detail + ")", false, {}};
      return {"upstream_unavailable", "the upstream closed the connection (" + detail + ")", true, {}};
    case e::tls_failed:
      return {"upstream_unavailable", "TLS with the upstream failed (" + detail + ")", false, {}};
    case e::bad_url:
      return {"upstream_unavailable", "the upstream's base URL is not usable (" + detail + ")", false, {}};
    default:
      return {"upstream_unavailable", "the upstream is unreachable (" + detail + ")", true, {}};
  }
}

std::string upstream_message(std::string_view body) {
  boost::system::error_code ec;
  auto v = json::parse(body, ec);
  if (!ec && v.is_object()) {
    const auto& o = v.get_object();
    const json::value* e = o.if_contains("error");
    if (e && e->is_object() && e->get_object().contains("message") && e->get_object().at("message").is_string())
      return std::string(e->get_object().at("message").get_string());
    if (e && e->is_string()) return std::string(e->get_string());
    if (const auto* m = o.if_contains("message"); m && m->is_string()) return std::string(m->get_string());
  }
  // Plain text (a proxy's page): its start is enough to tell what happened.
  return std::string(body.substr(0, 500));
}

std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  double seconds = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec != std::errc() || seconds < 0 || seconds > 86400) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

upstream_failure status_failure(int status, std::string_view body, const std::string* retry_after) {
  const auto said = upstream_message(body);
  const auto message = "upstream answered " + std::to_string(status) + (said.empty() ? std::string() : ": " + said);
  upstream_failure out{"upstream_error", message, false, {}};
  if (status == 401 || status == 403) out.code = "upstream_auth";
  if (status == 429) {
    out.code = "upstream_rate_limited";
    out.retryable = true;
  }
  if (status == 500 || status == 502 || status == 503 || status == 504) out.retryable = true;
  if (retry_after) out.retry_after = parse_retry_after(*retry_after);
  return out;
}

}  // namespace agw::core::openai
