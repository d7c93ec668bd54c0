#pragma once
// Shared by the providers_* integration tests: a gateway pointed at a fake
// upstream, sessions on the openai provider, and what the fake saw.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <string>

#include "tests/fake_upstream/fake_upstream_process.hpp"
#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"

namespace agw::test::providers {

using namespace std::chrono_literals;
using runs::str;

inline gateway_process::env_map openai_env(const fake_upstream_process& fake, gateway_process::env_map extra = {}) {
  gateway_process::env_map env{{"GATEWAY_OPENAI_BASE_URL", fake.base_url()},
                               {"GATEWAY_OPENAI_API_KEY", "sk-test-secret"},
                               {"GATEWAY_OPENAI_MAX_RETRIES", "2"}};
  for (auto& [k, v] : extra) env[k] = v;
  return env;
}

// {"requests":[{"scenario","authorization","body","at_ns"}],"ends":[{"scenario","kind","at_ns"}]}
inline boost::json::object journal(const fake_upstream_process& fake) {
  auto reply = http_call(fake.port(), "GET", "/_log", {}, {});
  return boost::json::parse(reply.body).as_object();
}

// A session whose model (the fake's scenario) is `model`.
inline std::string openai_session(std::uint16_t port, const std::string& model) {
  boost::json::object config{{"provider", "openai"}, {"model", model}};
  return runs::create_session(port, boost::json::serialize(boost::json::object{{"config", config}}));
}

// The chat-completions requests the fake received, oldest first.
inline boost::json::array upstream_requests(const fake_upstream_process& fake) { return journal(fake).at("requests").as_array(); }

inline const boost::json::array& messages_sent(const boost::json::value& request) {
  return request.at("body").at("messages").as_array();
}

// The run's error event's code ("" when none).
inline std::string error_code_of(const runs::sse_reader& r) {
  const auto* e = r.parser.last("error");
  return e ? e->field("code") : std::string();
}

}  // namespace agw::test::providers
