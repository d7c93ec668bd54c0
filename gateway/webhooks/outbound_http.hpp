#pragma once
// The gateway's outbound HTTP client for completion callbacks: resolve the
// callback's host, keep only addresses the address policy allows (so the
// address checked is the address connected to: no DNS-rebinding window),
// connect with a deadline, TLS with SNI and certificate + host name
// verification for https, send one POST, read the status line and headers
// only, close. Redirects are never followed.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "core/settings.hpp"
#include "core/webhooks/address_policy.hpp"
#include "core/webhooks/callback_target.hpp"
#include "core/webhooks/webhook_delivery.hpp"

namespace agw::gateway {

struct resolved_target {
  std::vector<boost::asio::ip::tcp::endpoint> endpoints;  // only the allowed ones
  // Why an address was refused (the first one), also when others were allowed:
  // the POST-time check refuses a host with any forbidden address, the
  // dispatcher connects to the allowed ones.
  std::string refusal;
};

// Resolves `t.host` (IP literals need no lookup) and applies the policy to every address.
boost::asio::awaitable<resolved_target> resolve_callback_target(const core::callback_target& t,
                                                                const core::address_policy& policy,
                                                                std::chrono::steady_clock::duration timeout);

using header_list = std::vector<std::pair<std::string, std::string>>;

class outbound_http {
 public:
  explicit outbound_http(const core::settings& config);

  // One POST; never throws: transport failures come back as attempt_result::error.
  boost::asio::awaitable<core::attempt_result> post(const core::callback_target& t, const core::address_policy& policy,
                                                    const header_list& headers, const std::string& body);

 private:
  const core::settings& config_;
  boost::asio::ssl::context tls_;
};

}  // namespace agw::gateway
