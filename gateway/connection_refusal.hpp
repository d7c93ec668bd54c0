#pragma once
// A connection over GATEWAY_MAX_CONNECTIONS: accepted (a refused TCP connect tells a
// client nothing), answered 503 `unavailable` with Retry-After, then closed. It is
// not counted as open and holds no request state: the answer is written at once,
// whatever the client sends is read and discarded for at most `linger` (closing
// with unread bytes would reset the connection and could destroy the answer), then
// the socket closes.
#include <boost/asio/ip/tcp.hpp>
#include <chrono>

#include "gateway/http_types.hpp"

namespace agw::gateway {

struct app_context;

inline constexpr std::chrono::milliseconds refusal_linger{1000};

// Runs on the socket's own executor (its strand); the socket is moved in.
void refuse_connection(net::ip::tcp::socket socket, app_context& app);

// After a final answer on a connection whose request was not read whole (a 413, a
// 431): ends the sending side and reads and discards what the client still sends,
// for at most refusal_linger, so that closing does not reset the connection and
// destroy the answer before the client has read it. The caller closes the socket.
awaitable<void> linger_before_close(beast::tcp_stream& stream);

}  // namespace agw::gateway
