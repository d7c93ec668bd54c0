#pragma once
// One client connection: reads requests (with header/body limits and
// timeouts), dispatches them, writes responses, keeps alive. Runs as a
// coroutine on the connection's own strand; all its state is in the frame.
#include <boost/asio/ip/tcp.hpp>
#include <memory>

#include "gateway/http_types.hpp"

namespace agw::gateway {

struct app_context;

awaitable<void> serve_connection(beast::tcp_stream stream, app_context& app);

}  // namespace agw::gateway
