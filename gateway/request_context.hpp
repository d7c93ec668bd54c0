#pragma once
// What a handler sees of one request: the parsed message, decoded path
// parameters and query, and the connection's stream for handlers that answer
// with an SSE stream instead of a response. Lives on the connection's strand.
#include <string>
#include <vector>

#include <boost/beast/core/flat_buffer.hpp>

#include "core/session_request.hpp"
#include "gateway/http_types.hpp"

namespace agw::gateway {

struct app_context;

struct request_context {
  app_context& app;
  request& req;
  beast::tcp_stream& stream;
  beast::flat_buffer& buffer;            // bytes read past this request (a pipelined next one)
  std::vector<std::string> path_params;  // {id} values in route order, percent-decoded
  core::query_params query;              // percent-decoded, in order
  // A streaming handler that took the socket over (and with it the rest of the
  // connection) sets this: the connection's coroutine then ends without touching it.
  bool stream_taken = false;
  std::string request_id{};  // X-Request-Id: the client's when sane, else made (gateway/request_id.hpp)

  const std::string& param(std::size_t i) const { return path_params.at(i); }
};

}  // namespace agw::gateway
