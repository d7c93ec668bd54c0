#include "gateway/http/client_connection.hpp"

#include <openssl/ssl.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <stdexcept>

namespace agw::gateway {

namespace net = boost::asio;
using tcp = net::ip::tcp;

net::ssl::context make_tls_client_context(const std::string& extra_ca_file, std::string_view setting) {
  net::ssl::context tls(net::ssl::context::tls_client);
  tls.set_default_verify_paths();
  if (!extra_ca_file.empty()) {
    boost::system::error_code ec;
    tls.load_verify_file(extra_ca_file, ec);
    if (ec) throw std::runtime_error(std::string(setting) + " '" + extra_ca_file + "': " + ec.message());
  }
  tls.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 | net::ssl::context::no_sslv3 |
                  net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1);
  return tls;
}

net::awaitable<resolved_addresses> resolve_host(std::shared_ptr<tcp::resolver> resolver, const std::string& host,
                                                bool host_is_address, std::uint16_t port,
                                                std::chrono::steady_clock::duration timeout) {
  resolved_addresses out;
  if (host_is_address) {
    out.addresses.push_back(net::ip::make_address(host, out.error));
    if (out.error) out.addresses.clear();
    co_return out;
  }
  net::steady_timer deadline(resolver->get_executor());
  deadline.expires_after(timeout);
  // Shared with the timer's handler, which may run after this frame is gone.
  auto timed_out = std::make_shared<bool>(false);
  deadline.async_wait([resolver, timed_out](const boost::system::error_code& ec) {
    if (ec) return;
    *timed_out = true;
    resolver->cancel();
  });
  auto resolving = resolver->async_resolve(host, std::to_string(port), net::as_tuple(net::use_awaitable));
  auto [ec, results] = co_await std::move(resolving);
  deadline.cancel();
  if (*timed_out)
    out.error = net::error::timed_out;
  else
    out.error = ec;
  if (!out.error)
    for (const auto& entry : results) out.addresses.push_back(entry.endpoint().address());
  co_return out;
}

bool prepare_tls_client(boost::beast::ssl_stream<boost::beast::tcp_stream>& stream, const std::string& host,
                        bool host_is_address) {
  if (!host_is_address && !SSL_set_tlsext_host_name(stream.native_handle(), host.c_str())) return false;
  stream.set_verify_mode(net::ssl::verify_peer);
  stream.set_verify_callback(net::ssl::host_name_verification(host));
  return true;
}

}  // namespace agw::gateway
