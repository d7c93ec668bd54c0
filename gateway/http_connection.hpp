#pragma once
// One client connection: reads requests (with header/body limits and
// timeouts), dispatches them, writes responses, keeps alive. Runs as a
// coroutine on the connection's strand (its io context, an implicit strand:
// core/io_executor.hpp); all its state is in the frame.
#include <boost/asio/ip/tcp.hpp>
#include <memory>

#include "gateway/http_types.hpp"

namespace agw::gateway {

struct app_context;

// Serves a connection on its strand (the socket's executor). `pending`: bytes
// already read from it (a connection an SSE stream hands back); `counted`: it is
// already in the open-connections gauge.
void start_connection(net::ip::tcp::socket socket, app_context& app, std::string pending = {}, bool counted = false);

// Ends a connection nobody serves any more: FIN after what was written, then close.
void close_connection(net::ip::tcp::socket& socket, app_context& app);

}  // namespace agw::gateway
