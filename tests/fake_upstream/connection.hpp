#pragma once
// One client connection to the fake upstream: reads a request, answers
// /_log itself, or plays the scenario's script for POST .../chat/completions
// while watching for the client hanging up (recorded in the journal as soon as
// the read sees it). One request per connection (Connection: close).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include "tests/fake_upstream/journal.hpp"

namespace agw::fake {

// The journal outlives every connection (main owns both).
boost::asio::awaitable<void> serve_plain(boost::asio::ip::tcp::socket socket, journal& log);
boost::asio::awaitable<void> serve_tls(boost::asio::ip::tcp::socket socket, boost::asio::ssl::context& tls, journal& log);

}  // namespace agw::fake
