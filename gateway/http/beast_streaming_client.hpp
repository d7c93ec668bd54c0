#pragma once
// core::streaming_http_client over Beast, for http and https upstreams (model
// APIs). Each exchange owns its resolver, its TCP (or TLS over TCP) stream, its
// read buffer and a response_parser<buffer_body>, so body bytes reach the
// caller piece by piece as they arrive, chunked encoding undone by Beast; one
// connection per exchange (Connection: close). TLS: SNI, verification against
// the system store plus an optional extra CA file (client_connection.hpp).
// Thread-safety: the client is shared and immutable after construction;
// each exchange runs on the executor it was prepared with (see
// core/http/streaming_http_client.hpp).
#include <boost/asio/ssl/context.hpp>
#include <cstddef>
#include <memory>
#include <string>

#include "core/http/streaming_http_client.hpp"

namespace agw::gateway {

struct beast_streaming_client_options {
  std::string extra_ca_file;                      // PEM bundle trusted besides the system store (https)
  std::string ca_file_setting = "extra CA file";  // names the file in the start-up error
  std::size_t header_limit = 64 * 1024;           // a response header larger than this is a protocol_error
  std::size_t max_piece = 16 * 1024;              // the most one read_some() returns
};

class beast_streaming_client final : public core::streaming_http_client {
 public:
  // Start-up: throws std::runtime_error when the extra CA file cannot be loaded.
  explicit beast_streaming_client(beast_streaming_client_options options = {});

  std::shared_ptr<core::streaming_http_exchange> prepare(boost::asio::any_io_executor executor,
                                                         core::streaming_request request) override;

 private:
  beast_streaming_client_options options_;
  // Shared with the exchanges: a TLS stream must not outlive its context.
  std::shared_ptr<boost::asio::ssl::context> tls_;
};

}  // namespace agw::gateway
