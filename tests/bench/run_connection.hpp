#pragma once
// One keep-alive client connection that runs messages on one session, one at a
// time: POST /sessions/{id}/messages, read the SSE answer to its end (the last
// chunk), and again on the same connection. For the sustained scenario, where
// the same sessions run again and again. Single-threaded: start() and the reads
// run on the thread running the io_context (no strand); a connection that failed
// is closed and opened again by the next start().
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "tests/bench/run_response.hpp"

namespace agw::bench {

class run_connection {
 public:
  run_connection(boost::asio::io_context& io, boost::asio::ip::tcp::endpoint endpoint, std::string session_id,
                 std::string message_body, unsigned expected_tokens);

  // Sends the message and reads the answer; `finished` is called once, from the io
  // thread (never inside start()), when the run is done or has failed.
  void start(std::function<void()> finished);
  // Gives up on the run in flight (the caller's deadline): it fails, and finishes.
  void abandon(const char* why);

  // The last run's: events, tokens, done, the first problem. A run that is not 200,
  // has no done, an error event, ids that are not consecutive or not K tokens failed.
  const stream_result& result() const { return result_; }
  bool failed() const { return result_.failed || !result_.done; }
  double seconds() const;  // POST sent → done read (0 when there was no done)

 private:
  bool ensure_connected();
  void read_more();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  void finish();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::endpoint endpoint_;
  boost::asio::ip::tcp::socket socket_;
  std::string request_;
  unsigned expected_tokens_;
  stream_result result_;
  std::optional<response_parser> parser_;  // one per response
  std::unique_ptr<char[]> buffer_;
  std::function<void()> finished_;
  bool running_ = false;
};

}  // namespace agw::bench
