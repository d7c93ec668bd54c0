#pragma once
// Short names for the Beast types every gateway file uses.
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace agw::gateway {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;

using request = http::request<http::string_body>;
using response = http::response<http::string_body>;
template <class T>
using awaitable = net::awaitable<T>;

}  // namespace agw::gateway
