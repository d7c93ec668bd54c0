#include "gateway/http/beast_streaming_client.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;
using agw::core::body_read;
using agw::core::streaming_http_errc;
using agw::core::streaming_request;
using agw::gateway::beast_streaming_client;

// Waits up to `limit` for `flag`; true when it was set in time.
bool wait_for(const std::atomic<bool>& flag, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// What the server saw of the client's request.
struct seen_request {
  std::string head;  // request line and headers
  std::string body;
};

// Sends bytes to the client, over TCP or TLS.
using writer = std::function<void(const std::string&)>;

// A one-connection HTTP server on 127.0.0.1, port 0, on its own thread with
// blocking sockets (TLS when given a context): it reads one request, then runs
// `script`. A script that stalls waits on `release`, which the destructor sets.
class loopback_server {
 public:
  using script = std::function<void(const writer& write, const std::atomic<bool>& release)>;

  explicit loopback_server(script s, net::ssl::context* tls = nullptr)
      : acceptor_(io_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)), tls_(tls) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this, s = std::move(s)] {
      try {
        tcp::socket socket(io_);
        acceptor_.accept(socket);
        if (tls_) {
          net::ssl::stream<tcp::socket> stream(std::move(socket), *tls_);
          stream.handshake(net::ssl::stream_base::server);
          serve(stream, s);
        } else {
          serve(socket, s);
        }
      } catch (const std::exception&) {
        // The client went away or refused the handshake (timeout, cancellation, TLS tests): nothing to serve.
      }
    });
  }
  ~loopback_server() {
    release_ = true;
    thread_.join();
  }

  std::uint16_t port() const { return port_; }
  std::string url(const std::string& target) const {
    return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) + target;
  }
  const seen_request& request() const { return request_; }

 private:
  template <class Stream>
  void serve(Stream& stream, const script& s) {
    read_request(stream);
    const writer write = [&stream](const std::string& text) { net::write(stream, net::buffer(text)); };
    s(write, release_);
    boost::system::error_code ignored;
    auto& lowest = stream.lowest_layer();
    lowest.shutdown(tcp::socket::shutdown_both, ignored);
  }

  template <class Stream>
  void read_request(Stream& stream) {
    std::string data;
    const auto end = net::read_until(stream, net::dynamic_buffer(data), "\r\n\r\n");
    request_.head = data.substr(0, end);
    std::size_t length = 0;
    if (auto at = request_.head.find("Content-Length: "); at != std::string::npos)
      length = std::stoul(request_.head.substr(at + 16));
    request_.body = data.substr(end);
    if (request_.body.size() < length) {
      std::string rest(length - request_.body.size(), '\0');
      net::read(stream, net::buffer(rest));
      request_.body += rest;
    }
  }

  net::io_context io_;
  tcp::acceptor acceptor_;
  net::ssl::context* tls_;
  std::uint16_t port_ = 0;
  seen_request request_;
  std::atomic<bool> release_{false};
  std::thread thread_;
};

std::string chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

const std::string sse_head =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Upstream: yes\r\nTransfer-Encoding: chunked\r\n\r\n";

// Runs `scenario` on `io` with a bound on the whole test; fails the test if it does not finish.
template <class T>
T run_bounded(net::io_context& io, net::awaitable<T> scenario, std::chrono::seconds limit = 10s) {
  auto result = net::co_spawn(io, std::move(scenario), net::use_future);
  io.run_for(limit);
  REQUIRE_MESSAGE(result.wait_for(0s) == std::future_status::ready, "the scenario did not finish in time");
  return result.get();
}

struct stream_outcome {
  agw::core::open_result opened;
  int status = 0;
  std::string content_type;
  std::string custom_header;
  std::vector<std::string> pieces;
  body_read last;
};

net::awaitable<stream_outcome> read_whole_stream(std::shared_ptr<beast_streaming_client> client, streaming_request request,
                                                 std::shared_ptr<std::atomic<bool>> first_piece) {
  stream_outcome out;
  auto executor = co_await net::this_coro::executor;
  auto exchange = client->prepare(executor, std::move(request));
  auto opening = exchange->open();
  out.opened = co_await std::move(opening);
  if (out.opened.error) co_return out;
  out.status = exchange->head().status;
  if (const auto* v = exchange->head().find("content-type")) out.content_type = *v;
  if (const auto* v = exchange->head().find("X-UPSTREAM")) out.custom_header = *v;
  for (int i = 0; i < 100; ++i) {
    auto reading = exchange->read_some();
    out.last = co_await std::move(reading);
    if (!out.last.data.empty()) {
      out.pieces.push_back(out.last.data);
      *first_piece = true;
    }
    if (out.last.error || out.last.end) break;
  }
  co_return out;
}

streaming_request request_to(const std::string& url) {
  streaming_request r;
  r.method = "POST";
  r.url = url;
  r.headers = {{"Content-Type", "application/json"}, {"Authorization", "Bearer k"}};
  r.body = R"({"stream":true})";
  r.connect_timeout = 2000ms;
  r.idle_timeout = 3000ms;
  return r;
}

}  // namespace

TEST_CASE("beast_streaming_client: a chunked event stream arrives piece by piece, as it is sent") {
  const std::vector<std::string> pieces{"data: one\n\n", "data: two\n\n", "data: three\n\n", "data: [DONE]\n\n"};
  auto first_piece = std::make_shared<std::atomic<bool>>(false);
  std::atomic<bool> client_had_a_piece_before_the_last{false};
  loopback_server server([&](const writer& write, const std::atomic<bool>&) {
    write(sse_head);
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      if (i + 1 == pieces.size())
        client_had_a_piece_before_the_last = wait_for(*first_piece, 5000ms);
      else if (i > 0)
        std::this_thread::sleep_for(30ms);
      write(chunk(pieces[i]));
    }
    write("0\r\n\r\n");
  });

  net::io_context io;
  auto client = std::make_shared<beast_streaming_client>();
  auto out = run_bounded(io, read_whole_stream(client, request_to(server.url("/v1/chat/completions?x=1")), first_piece));

  REQUIRE_FALSE(out.opened.error);
  CHECK(out.status == 200);
  CHECK(out.content_type == "text/event-stream");
  CHECK(out.custom_header == "yes");
  CHECK(out.last.end);
  CHECK_FALSE(out.last.error);
  CHECK(client_had_a_piece_before_the_last.load());
  CHECK(out.pieces.size() >= 2);
  std::string joined;
  for (const auto& p : out.pieces) joined += p;
  CHECK(joined == "data: one\n\ndata: two\n\ndata: three\n\ndata: [DONE]\n\n");

  const auto& seen = server.request();
  CHECK(seen.head.starts_with("POST /v1/chat/completions?x=1 HTTP/1.1\r\n"));
  CHECK(seen.head.find("Host: 127.0.0.1:" + std::to_string(server.port()) + "\r\n") != std::string::npos);
  CHECK(seen.head.find("Authorization: Bearer k\r\n") != std::string::npos);
  CHECK(seen.body == R"({"stream":true})");
}

TEST_CASE("beast_streaming_client: a body with Content-Length and an error status are read like any other") {
  loopback_server server([](const writer& write, const std::atomic<bool>&) {
    write("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n");
    write(R"({"error":"x"})");
  });
  net::io_context io;
  auto client = std::make_shared<beast_streaming_client>();
  auto out = run_bounded(io, read_whole_stream(client, request_to(server.url("/")), std::make_shared<std::atomic<bool>>()));
  REQUIRE_FALSE(out.opened.error);
  CHECK(out.status == 429);
  CHECK(out.last.end);
  std::string joined;
  for (const auto& p : out.pieces) joined += p;
  CHECK(joined == R"({"error":"x"})");
}

TEST_CASE("beast_streaming_client: a server that stops sending ends the read with idle_timeout") {
  loopback_server server([](const writer& write, const std::atomic<bool>& release) {
    write(sse_head);
    write(chunk("data: one\n\n"));
    // Stall without closing, until the test is over (bounded).
    wait_for(release, 3000ms);
  });
  net::io_context io;
  auto client = std::make_shared<beast_streaming_client>();
  auto request = request_to(server.url("/stall"));
  request.idle_timeout = 200ms;
  const auto started = std::chrono::steady_clock::now();
  auto out = run_bounded(io, read_whole_stream(client, request, std::make_shared<std::atomic<bool>>()));
  const auto took = std::chrono::steady_clock::now() - started;
  REQUIRE_FALSE(out.opened.error);
  REQUIRE(out.pieces.size() == 1);
  CHECK(out.pieces[0] == "data: one\n\n");
  CHECK(out.last.error == streaming_http_errc::idle_timeout);
  CHECK(took >= 200ms);
  CHECK(took < 2000ms);
}

TEST_CASE("beast_streaming_client: a server that never answers the header ends open() with idle_timeout") {
  loopback_server server([](const writer&, const std::atomic<bool>& release) { wait_for(release, 3000ms); });
  net::io_context io;
  auto client = std::make_shared<beast_streaming_client>();
  auto request = request_to(server.url("/"));
  request.idle_timeout = 200ms;
  auto out = run_bounded(io, read_whole_stream(client, request, std::make_shared<std::atomic<bool>>()));
  CHECK(out.opened.error == streaming_http_errc::idle_timeout);
}

namespace {

struct cancel_outcome {
  body_read first;
  body_read cancelled;
  body_read after;
  std::chrono::steady_clock::duration waited{};
};

// Reads one piece, then a read that stalls; cancel() from a timer 100 ms later must end it.
net::awaitable<cancel_outcome> cancel_with_method(std::shared_ptr<beast_streaming_client> client, streaming_request request) {
  cancel_outcome out;
  auto executor = co_await net::this_coro::executor;
  auto exchange = client->prepare(executor, std::move(request));
  auto opening = exchange->open();
  auto opened = co_await std::move(opening);
  REQUIRE_FALSE(opened.error);
  auto reading = exchange->read_some();
  out.first = co_await std::move(reading);

  auto timer = std::make_shared<net::steady_timer>(executor, 100ms);
  timer->async_wait([timer, exchange](const boost::system::error_code& ec) {
    if (!ec) exchange->cancel();
  });
  const auto started = std::chrono::steady_clock::now();
  auto stalled = exchange->read_some();
  out.cancelled = co_await std::move(stalled);
  out.waited = std::chrono::steady_clock::now() - started;
  auto again = exchange->read_some();
  out.after = co_await std::move(again);
  co_return out;
}

// The same, but the read is cancelled the Asio way: raced against a timer, as a provider races it against the run's abort.
net::awaitable<cancel_outcome> cancel_by_race(std::shared_ptr<beast_streaming_client> client, streaming_request request) {
  using namespace boost::asio::experimental::awaitable_operators;
  cancel_outcome out;
  auto executor = co_await net::this_coro::executor;
  auto exchange = client->prepare(executor, std::move(request));
  auto opening = exchange->open();
  auto opened = co_await std::move(opening);
  REQUIRE_FALSE(opened.error);
  auto reading = exchange->read_some();
  out.first = co_await std::move(reading);

  net::steady_timer abort_signal(executor, 100ms);
  const auto started = std::chrono::steady_clock::now();
  auto stalled = exchange->read_some();
  auto aborted = abort_signal.async_wait(net::use_awaitable);
  auto race = std::move(stalled) || std::move(aborted);
  auto winner = co_await std::move(race);
  out.waited = std::chrono::steady_clock::now() - started;
  CHECK(winner.index() == 1);
  auto again = exchange->read_some();
  out.after = co_await std::move(again);
  co_return out;
}

// open() raced against a timer while the server sits on the request without answering.
net::awaitable<agw::core::open_result> cancel_open_by_race(std::shared_ptr<beast_streaming_client> client,
                                                           streaming_request request) {
  using namespace boost::asio::experimental::awaitable_operators;
  auto executor = co_await net::this_coro::executor;
  auto exchange = client->prepare(executor, std::move(request));
  net::steady_timer abort_signal(executor, 100ms);
  auto opening = exchange->open();
  auto aborted = abort_signal.async_wait(net::use_awaitable);
  auto race = std::move(opening) || std::move(aborted);
  auto winner = co_await std::move(race);
  CHECK(winner.index() == 1);
  auto reading = exchange->read_some();
  auto after = co_await std::move(reading);
  CHECK(after.error == streaming_http_errc::cancelled);
  auto again = exchange->open();
  co_return co_await std::move(again);
}

}  // namespace

TEST_CASE("beast_streaming_client: cancellation stops a pending read at once") {
  auto stalling_server = [](const writer& write, const std::atomic<bool>& release) {
    write(sse_head);
    write(chunk("data: one\n\n"));
    wait_for(release, 3000ms);
  };
  net::io_context io;
  auto client = std::make_shared<beast_streaming_client>();

  SUBCASE("exchange->cancel()") {
    loopback_server server(stalling_server);
    auto out = run_bounded(io, cancel_with_method(client, request_to(server.url("/"))));
    CHECK(out.first.data == "data: one\n\n");
    CHECK(out.cancelled.error == streaming_http_errc::cancelled);
    CHECK(out.waited < 1000ms);
    CHECK(out.after.error == streaming_http_errc::cancelled);
  }
  SUBCASE("per-operation cancellation of read_some()") {
    loopback_server server(stalling_server);
    auto out = run_bounded(io, cancel_by_race(client, request_to(server.url("/"))));
    CHECK(out.first.data == "data: one\n\n");
    CHECK(out.waited < 1000ms);
    CHECK(out.after.error == streaming_http_errc::cancelled);
  }
}

TEST_CASE("beast_streaming_client: cancellation stops open() while it waits for the response header") {
  loopback_server server([](const writer&, const std::atomic<bool>& release) { wait_for(release, 3000ms); });
  net::io_context io;
  auto client = std::make_shared<beast_streaming_client>();
  const auto started = std::chrono::steady_clock::now();
  auto second_open = run_bounded(io, cancel_open_by_race(client, request_to(server.url("/"))));
  CHECK(std::chrono::steady_clock::now() - started < 1000ms);
  CHECK(second_open.error == streaming_http_errc::misuse);
}

TEST_CASE("beast_streaming_client: connection failures are error codes") {
  net::io_context io;
  auto client = std::make_shared<beast_streaming_client>();
  auto no_piece = std::make_shared<std::atomic<bool>>();
  SUBCASE("nothing listens on the port") {
    std::uint16_t port = 0;
    {
      tcp::acceptor probe(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
      port = probe.local_endpoint().port();
    }
    auto out = run_bounded(io, read_whole_stream(client, request_to("http://127.0.0.1:" + std::to_string(port) + "/"), no_piece));
    CHECK(out.opened.error == streaming_http_errc::connect_failed);
  }
  SUBCASE("not an http URL") {
    auto out = run_bounded(io, read_whole_stream(client, request_to("ftp://127.0.0.1/"), no_piece));
    CHECK(out.opened.error == streaming_http_errc::bad_url);
    CHECK(out.opened.detail == "url must use http or https");
  }
}

namespace {

// A directory of its own under the system temp dir, removed at the end.
struct temp_dir {
  temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "agw-streaming-tls-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::filesystem::path path;
};

// A self-signed certificate for 127.0.0.1 (IP SAN), by the openssl CLI; false when that fails.
bool make_self_signed(const temp_dir& dir) {
  const std::string command =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
      "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout '" +
      (dir.path / "key.pem").string() + "' -out '" + (dir.path / "cert.pem").string() + "' >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

}  // namespace

TEST_CASE("beast_streaming_client: https verifies the server against the extra CA file and streams the same way") {
  temp_dir dir;
  REQUIRE_MESSAGE(make_self_signed(dir), "the openssl CLI is needed to make a certificate: run scripts/setup.sh");
  net::ssl::context server_tls(net::ssl::context::tls_server);
  server_tls.use_certificate_chain_file((dir.path / "cert.pem").string());
  server_tls.use_private_key_file((dir.path / "key.pem").string(), net::ssl::context::pem);
  net::io_context io;
  auto first_piece = std::make_shared<std::atomic<bool>>(false);

  SUBCASE("trusted through the extra CA file: the pieces arrive as they are sent") {
    std::atomic<bool> client_had_a_piece_before_the_last{false};
    loopback_server server(
        [&](const writer& write, const std::atomic<bool>&) {
          write(sse_head);
          write(chunk("data: one\n\n"));
          client_had_a_piece_before_the_last = wait_for(*first_piece, 5000ms);
          write(chunk("data: two\n\n"));
          write("0\r\n\r\n");
        },
        &server_tls);
    agw::gateway::beast_streaming_client_options options;
    options.extra_ca_file = (dir.path / "cert.pem").string();
    auto client = std::make_shared<beast_streaming_client>(options);
    auto out = run_bounded(io, read_whole_stream(client, request_to(server.url("/v1/chat/completions")), first_piece));
    REQUIRE_FALSE(out.opened.error);
    CHECK(out.status == 200);
    CHECK(out.last.end);
    CHECK(client_had_a_piece_before_the_last.load());
    std::string joined;
    for (const auto& p : out.pieces) joined += p;
    CHECK(joined == "data: one\n\ndata: two\n\n");
    CHECK(server.request().head.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"));
  }
  SUBCASE("not trusted: open() fails with tls_failed") {
    loopback_server server([](const writer&, const std::atomic<bool>&) {}, &server_tls);
    auto client = std::make_shared<beast_streaming_client>();
    auto out = run_bounded(io, read_whole_stream(client, request_to(server.url("/")), first_piece));
    CHECK(out.opened.error == streaming_http_errc::tls_failed);
    CHECK(out.opened.detail.starts_with("tls: "));
  }
  SUBCASE("a missing extra CA file stops start-up") {
    agw::gateway::beast_streaming_client_options options;
    options.extra_ca_file = (dir.path / "absent.pem").string();
    options.ca_file_setting = "GATEWAY_TEST_CA_FILE";
    CHECK_THROWS_WITH_AS(beast_streaming_client{options}, doctest::Contains("GATEWAY_TEST_CA_FILE"), std::runtime_error);
  }
}
