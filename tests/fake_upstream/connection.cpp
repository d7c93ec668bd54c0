#include "tests/fake_upstream/connection.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <sstream>

#include "tests/fake_upstream/scenario.hpp"

namespace agw::fake {

namespace net = boost::asio;
namespace http = boost::beast::http;
using namespace net::experimental::awaitable_operators;
constexpr auto tuple_awaitable = net::as_tuple(net::use_awaitable);

namespace {

std::string head_text(int status, const std::vector<std::pair<std::string, std::string>>& headers, bool chunked,
                      std::size_t length) {
  std::ostringstream out;
  out << "HTTP/1.1 " << status << (status == 200 ? " OK" : " Error") << "\r\nConnection: close\r\n";
  if (status == 200) out << "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n";
  for (const auto& [k, v] : headers) out << k << ": " << v << "\r\n";
  if (chunked)
    out << "Transfer-Encoding: chunked\r\n\r\n";
  else
    out << "Content-Length: " << length << "\r\n\r\n";
  return out.str();
}

std::string chunk_of(const std::string& bytes) {
  std::ostringstream out;
  out << std::hex << bytes.size() << "\r\n" << bytes << "\r\n";
  return out.str();
}

// The send time goes into a token at the moment it is written (the bench's latency probe).
std::string stamped(std::string bytes) {
  const auto at = bytes.find(stamp_marker);
  if (at != std::string::npos) bytes.replace(at, stamp_marker.size(), std::to_string(monotonic_ns()));
  return bytes;
}

// Plays the script; true when all of it was written.
template <class Stream>
net::awaitable<bool> play(Stream& stream, script s) {
  net::steady_timer timer(co_await net::this_coro::executor);
  const bool streamed = s.status == 200;
  std::string whole;
  for (const auto& p : s.pieces) whole += p.bytes;
  auto head = head_text(s.status, s.headers, streamed, whole.size());
  if (!streamed) head += whole;
  auto [ec, n] = co_await net::async_write(stream, net::buffer(head), tuple_awaitable);
  if (ec || !streamed) co_return !ec;
  for (const auto& p : s.pieces) {
    if (p.delay.count() > 0) {
      timer.expires_after(p.delay);
      auto [wait_ec] = co_await timer.async_wait(tuple_awaitable);
      if (wait_ec) co_return false;
    }
    const auto bytes = chunk_of(stamped(p.bytes));
    auto [write_ec, written] = co_await net::async_write(stream, net::buffer(bytes), tuple_awaitable);
    if (write_ec) co_return false;
  }
  if (!s.finish_http) co_return true;
  const std::string last = "0\r\n\r\n";
  auto [end_ec, end_n] = co_await net::async_write(stream, net::buffer(last), tuple_awaitable);
  co_return !end_ec;
}

// Completes when the client closes its side (or resets): how a hang-up is seen at once.
template <class Stream>
net::awaitable<void> watch_hangup(Stream& stream) {
  char byte[256];
  for (;;) {
    auto [ec, n] = co_await stream.async_read_some(net::buffer(byte), tuple_awaitable);
    if (ec) co_return;
  }
}

template <class Stream>
net::awaitable<void> answer(Stream& stream, const http::request<http::string_body>& req, journal& log) {
  const auto target = std::string(req.target());
  if (target == "/_log") {
    const auto body = boost::json::serialize(log.to_json());
    const auto text = head_text(200, {{"Content-Type", "application/json"}}, false, body.size()) + body;
    co_await net::async_write(stream, net::buffer(text), tuple_awaitable);
    co_return;
  }
  boost::system::error_code ec;
  auto parsed = boost::json::parse(req.body(), ec);
  const auto request = !ec && parsed.is_object() ? parsed.get_object() : boost::json::object{};
  std::string spelled = req["X-Fake-Scenario"].empty() ? "" : std::string(req["X-Fake-Scenario"]);
  if (spelled.empty() && request.contains("model") && request.at("model").is_string())
    spelled = std::string(request.at("model").get_string());
  const auto attempt = log.record_request(spelled, std::string(req[http::field::authorization]), req.body());
  auto s = script_for(parse_scenario(spelled), request, attempt);
  auto playing = play(stream, std::move(s));
  auto watching = watch_hangup(stream);
  auto outcome = co_await (std::move(playing) || std::move(watching));
  const bool hung_up = outcome.index() == 1 || !std::get<0>(outcome);
  log.record_end(spelled, hung_up ? "disconnect" : "complete");
}

template <class Stream>
net::awaitable<void> serve(Stream& stream, journal& log) {
  boost::beast::flat_buffer buffer;
  http::request<http::string_body> req;
  auto [ec, n] = co_await http::async_read(stream, buffer, req, tuple_awaitable);
  if (ec) co_return;
  co_await answer(stream, req, log);
}

}  // namespace

net::awaitable<void> serve_plain(net::ip::tcp::socket socket, journal& log) {
  co_await serve(socket, log);
  boost::system::error_code ignored;
  socket.shutdown(net::ip::tcp::socket::shutdown_both, ignored);
}

net::awaitable<void> serve_tls(net::ip::tcp::socket socket, net::ssl::context& tls, journal& log) {
  net::ssl::stream<net::ip::tcp::socket> stream(std::move(socket), tls);
  auto [ec] = co_await stream.async_handshake(net::ssl::stream_base::server, tuple_awaitable);
  if (ec) co_return;
  co_await serve(stream, log);
  boost::system::error_code ignored;
  stream.lowest_layer().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
}

}  // namespace agw::fake
