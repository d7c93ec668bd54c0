#pragma once
// Connection steps every outbound HTTP client of the gateway shares (completion
// callbacks in gateway/webhooks/outbound_http, upstream models in
// gateway/http/beast_streaming_client): the TLS client context, resolving a
// host under a deadline, and preparing a TLS stream for SNI and certificate +
// host name verification. Free functions; they own nothing beyond their call.
// Thread-safety: the context is built at start-up and then only read; the
// other functions run on the executor of the objects passed to them.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace agw::gateway {

// A TLS 1.2+ client context verifying against the system store plus, when
// given, `extra_ca_file`. Start-up only: throws std::runtime_error naming
// `setting` when that file cannot be loaded.
boost::asio::ssl::context make_tls_client_context(const std::string& extra_ca_file, std::string_view setting);

struct resolved_addresses {
  // boost::asio::error::timed_out when the deadline passed; operation_aborted
  // when someone else cancelled the resolver.
  boost::system::error_code error;
  std::vector<boost::asio::ip::address> addresses;
};

// The addresses of `host` (an IP literal needs no lookup). The resolver is the
// caller's so that the caller can cancel it; the deadline cancels it too.
boost::asio::awaitable<resolved_addresses> resolve_host(std::shared_ptr<boost::asio::ip::tcp::resolver> resolver,
                                                        const std::string& host, bool host_is_address, std::uint16_t port,
                                                        std::chrono::steady_clock::duration timeout);

// Sets SNI to `host` (not for an IP literal) and verification of the peer's
// certificate against it (an IP literal is matched against the IP SANs).
// False when OpenSSL refused the SNI name.
bool prepare_tls_client(boost::beast::ssl_stream<boost::beast::tcp_stream>& stream, const std::string& host,
                        bool host_is_address);

}  // namespace agw::gateway
