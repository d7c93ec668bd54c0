// fake_upstream: an OpenAI-compatible chat-completions server for tests. Listens
// on 127.0.0.1, port 0 (http, and https with --tls-cert/--tls-key), prints
// "http_port=N" (and "https_port=M") on stdout, and serves scripted streams
// (scenario.hpp) until SIGTERM or SIGINT. GET /_log returns what it saw.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <optional>
#include <string>

#include "tests/fake_upstream/connection.hpp"

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

net::awaitable<void> accept_loop(tcp::acceptor& acceptor, net::ssl::context* tls, agw::fake::journal& log) {
  for (;;) {
    auto socket = co_await acceptor.async_accept(net::use_awaitable);
    const auto executor = socket.get_executor();
    if (tls)
      net::co_spawn(executor, agw::fake::serve_tls(std::move(socket), *tls, log), net::detached);
    else
      net::co_spawn(executor, agw::fake::serve_plain(std::move(socket), log), net::detached);
  }
}

tcp::acceptor listen_loopback(net::io_context& io) {
  tcp::acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  return acceptor;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cert, key;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--tls-cert") cert = argv[i + 1];
    if (flag == "--tls-key") key = argv[i + 1];
  }
  net::io_context io(1);
  agw::fake::journal log;
  auto plain = listen_loopback(io);
  std::optional<tcp::acceptor> secure;
  net::ssl::context tls(net::ssl::context::tls_server);
  if (!cert.empty()) {
    tls.use_certificate_chain_file(cert);
    tls.use_private_key_file(key, net::ssl::context::pem);
    secure.emplace(listen_loopback(io));
  }
  std::printf("http_port=%u\n", plain.local_endpoint().port());
  if (secure) std::printf("https_port=%u\n", secure->local_endpoint().port());
  std::fflush(stdout);
  net::co_spawn(io, accept_loop(plain, nullptr, log), net::detached);
  if (secure) net::co_spawn(io, accept_loop(*secure, &tls, log), net::detached);
  net::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&io](const boost::system::error_code&, int) { io.stop(); });
  io.run();
  return 0;
}
