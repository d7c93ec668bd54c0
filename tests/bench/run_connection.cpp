#include "tests/bench/run_connection.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

namespace agw::bench {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

constexpr std::size_t read_buffer_size = 16 * 1024;

}  // namespace

run_connection::run_connection(net::io_context& io, tcp::endpoint endpoint, std::string session_id, std::string message_body,
                               unsigned expected_tokens)
    : io_(io),
      endpoint_(std::move(endpoint)),
      socket_(io),
      expected_tokens_(expected_tokens),
      buffer_(new char[read_buffer_size]) {
  // Keep-alive (HTTP/1.1's default): the server hands the connection back after the done.
  request_ = "POST /sessions/" + session_id + "/messages HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(endpoint_.port()) +
             "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: " +
             std::to_string(message_body.size()) + "\r\n\r\n" + message_body;
}

bool run_connection::ensure_connected() {
  if (socket_.is_open()) return true;
  boost::system::error_code ec;
  socket_.connect(endpoint_, ec);
  if (ec) {
    result_.fail("connect: " + ec.message());
    socket_.close(ec);
    return false;
  }
  socket_.set_option(tcp::no_delay(true), ec);
  return true;
}

void run_connection::start(std::function<void()> finished) {
  finished_ = std::move(finished);
  running_ = true;
  result_ = stream_result{};
  result_.tokens.reserve(expected_tokens_ + 8);
  parser_.emplace(result_);
  if (!ensure_connected()) {
    net::post(io_, [this] { finish(); });
    return;
  }
  result_.sent = clock_type::now();
  net::async_write(socket_, net::buffer(request_), [this](const boost::system::error_code& ec, std::size_t) {
    if (ec && running_) result_.fail("write: " + ec.message());
  });
  read_more();
}

void run_connection::abandon(const char* why) {
  if (!running_) return;
  result_.fail(why);
  boost::system::error_code ignored;
  socket_.close(ignored);  // the pending read completes with an error and finishes
}

void run_connection::read_more() {
  socket_.async_read_some(net::buffer(buffer_.get(), read_buffer_size),
                          [this](const boost::system::error_code& ec, std::size_t n) { on_read(ec, n); });
}

void run_connection::on_read(const boost::system::error_code& ec, std::size_t n) {
  if (n > 0) parser_->feed(buffer_.get(), n, clock_type::now());
  if (!parser_->complete() && !ec) return read_more();
  if (!parser_->complete() && !result_.done)
    result_.fail(ec == net::error::eof ? std::string("connection closed before done") : "read: " + ec.message());
  if (parser_->complete() && !result_.done) result_.fail("response ended without done");
  if (result_.done && result_.tokens.size() != expected_tokens_)
    result_.fail("got " + std::to_string(result_.tokens.size()) + " tokens, expected " + std::to_string(expected_tokens_));
  finish();
}

void run_connection::finish() {
  if (!running_) return;
  running_ = false;
  // A connection that did not end its answer cleanly is not reused.
  if (failed() || !parser_->complete()) {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }
  auto finished = std::move(finished_);
  finished_ = nullptr;
  if (finished) finished();
}

double run_connection::seconds() const {
  if (!result_.done) return 0.0;
  return std::chrono::duration<double>(result_.done_at - result_.sent).count();
}

}  // namespace agw::bench
