// HTTP/1.1 conformance at the byte level, on the real binary over raw sockets:
// HEAD answers as GET without one byte of body (checked by pipelining a GET behind
// it on the same keep-alive connection), OPTIONS is a 204 with Allow, Host is
// required once in HTTP/1.1, an oversized header block is a 431, Connection: close
// is honoured, and an Expect: 100-continue body over the limit is refused unsent.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/session_fixtures.hpp"

using namespace agw::test;
using namespace agw::test::fixtures;
using namespace std::chrono_literals;

namespace {

std::string head_request(const std::string& target) { return "HEAD " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"; }
std::string get_request(const std::string& target) { return "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"; }

// Sends HEAD then GET /healthz on one connection in one write: if the HEAD answer had
// any body, those bytes would be read as the start of the second response.
http_reply head_then_healthz(std::uint16_t port, const std::string& target) {
  http_client c(port);
  c.send_raw(head_request(target) + get_request("/healthz"));
  auto head = c.read_head();
  auto next = c.read_reply();
  CHECK(next.status == 200);
  CHECK(next.body == R"({"status":"ok"})");
  return head;
}

}  // namespace

TEST_CASE("HEAD answers as GET does, with its headers and no body, on every GET route") {
  gateway_process gw;
  const auto sid = str(create_session(gw.port()).at("id"));
  const std::vector<std::string> targets = {"/healthz",
                                            "/readyz",
                                            "/",
                                            "/sessions",
                                            "/sessions/" + sid,
                                            "/sessions/" + sid + "/messages",
                                            "/sessions/" + sid + "/webhooks",
                                            "/sessions/no-such-session",
                                            "/nope"};
  for (const auto& target : targets) {
    CAPTURE(target);
    auto get = http_call(gw.port(), "GET", target, {}, {});
    auto head = head_then_healthz(gw.port(), target);
    CHECK(head.status == get.status);
    CHECK(head.header("Content-Type") == get.header("Content-Type"));
    CHECK(head.header("Content-Length") == std::to_string(get.body.size()));
    CHECK(head.body.empty());
  }
  SUBCASE("/metrics: same status and type (its length moves with the counters)") {
    auto head = head_then_healthz(gw.port(), "/metrics");
    CHECK(head.status == 200);
    CHECK(head.header("Content-Type").starts_with("text/plain"));
    CHECK(!head.header("Content-Length").empty());
  }
  SUBCASE("/sessions/{id}/events: the stream's status and type, and no stream") {
    auto head = head_then_healthz(gw.port(), "/sessions/" + sid + "/events");
    CHECK(head.status == 200);
    CHECK(head.header("Content-Type") == "text/event-stream");
    CHECK(head.header("Transfer-Encoding").empty());
    auto missing = head_then_healthz(gw.port(), "/sessions/no-such-session/events");
    CHECK(missing.status == 404);
    // The long poll's HEAD (Accept: application/json) is its JSON answer's head.
    http_client c(gw.port());
    c.send_raw("HEAD /sessions/" + sid + "/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n" +
               get_request("/healthz"));
    auto poll = c.read_head();
    CHECK(poll.status == 200);
    CHECK(poll.header("Content-Type") == "application/json; charset=utf-8");
    CHECK(!poll.header("Content-Length").empty());
    CHECK(c.read_reply().status == 200);
  }
}

TEST_CASE("HEAD where GET is not served is a 405 with Allow and no body") {
  gateway_process gw;
  const auto sid = str(create_session(gw.port()).at("id"));
  auto head = head_then_healthz(gw.port(), "/sessions/" + sid + "/abort");
  CHECK(head.status == 405);
  CHECK(head.header("Allow") == "POST, OPTIONS");
  CHECK(head.header("Content-Type") == "application/json; charset=utf-8");
  CHECK(std::stoi(head.header("Content-Length")) > 0);  // the GET-less error body's length, not its bytes
}

TEST_CASE("OPTIONS answers 204 with Allow and no body; an unknown path is still a 404") {
  gateway_process gw;
  http_client c(gw.port());
  c.send_raw("OPTIONS /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + get_request("/healthz"));
  auto options = c.read_head();
  CHECK(options.status == 204);
  CHECK(options.header("Allow") == "POST, GET, HEAD, OPTIONS");
  CHECK(options.header("Content-Length").empty());
  auto next = c.read_reply();  // nothing between the 204's head and this response
  CHECK(next.status == 200);
  CHECK(next.body == R"({"status":"ok"})");

  auto root = http_call(gw.port(), "OPTIONS", "/", {}, {});
  CHECK(root.status == 204);
  CHECK(root.header("Allow") == "GET, HEAD, OPTIONS");
  check_error(http_call(gw.port(), "OPTIONS", "/nope", {}, {}), 404, "not_found");

  // OPTIONS * asks about the server: every method some path takes.
  http_client any(gw.port());
  any.send_raw("OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + get_request("/healthz"));
  auto server = any.read_head();
  CHECK(server.status == 204);
  CHECK(server.header("Allow") == "GET, HEAD, POST, PATCH, DELETE, OPTIONS");
  CHECK(any.read_reply().status == 200);
}

TEST_CASE("Host: an HTTP/1.1 request needs exactly one; HTTP/1.0 may omit it") {
  gateway_process gw;
  SUBCASE("HTTP/1.1 without Host is a 400, and the connection closes") {
    http_client c(gw.port());
    c.send_raw("GET /healthz HTTP/1.1\r\n\r\n");
    auto r = c.read_reply();
    check_error(r, 400, "bad_request");
    CHECK(c.closed_by_peer(2s));
  }
  SUBCASE("two Host headers are a 400") {
    http_client c(gw.port());
    c.send_raw("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: other.example\r\n\r\n");
    check_error(c.read_reply(), 400, "bad_request");
  }
  SUBCASE("a bad request changes nothing: POST /sessions without Host creates no session") {
    http_client c(gw.port());
    c.send_raw("POST /sessions HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    check_error(c.read_reply(), 400, "bad_request");
    CHECK(get_json(gw.port(), "/sessions").at("total").as_int64() == 0);
  }
  SUBCASE("HTTP/1.0 without Host is served") {
    http_client c(gw.port());
    c.send_raw("GET /healthz HTTP/1.0\r\n\r\n");
    auto r = c.read_reply();
    CHECK(r.status == 200);
  }
}

TEST_CASE("a header block over GATEWAY_MAX_HEADER_BYTES is a 431 request_header_fields_too_large") {
  gateway_process gw;
  http_client c(gw.port());
  c.send_raw("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + std::string(64 * 1024, 'p') + "\r\n\r\n");
  auto r = c.read_reply();
  check_error(r, 431, "request_header_fields_too_large");
  CHECK(r.header("Connection") == "close");
}

TEST_CASE("a 431 reaches a client that is still sending its oversized header (no reset destroys it)") {
  gateway_process gw;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(gw.port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  // 4 MiB of header: far past the 16 KiB limit and past what the sockets' buffers hold,
  // so the server answers while the client is still writing. (On loopback Linux hands
  // the client the answer even when the server closes on unread bytes and resets; the
  // server's linger is for real networks, where the reset can overtake the answer.
  // This checks the answer arrives whole either way.)
  const std::string head = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + std::string(4 << 20, 'p');
  std::size_t sent = 0;
  while (sent < head.size()) {
    const auto n = ::send(fd, head.data() + sent, head.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may stop reading once it has lingered enough
    sent += static_cast<std::size_t>(n);
  }
  std::string reply;
  char buf[4096];
  for (;;) {
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    reply.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  CAPTURE(sent);
  CHECK(reply.rfind("HTTP/1.1 431 ", 0) == 0);
  CHECK(reply.find("request_header_fields_too_large") != std::string::npos);
}

TEST_CASE("Connection: close is honoured: the answer says so and the server closes") {
  gateway_process gw;
  http_client c(gw.port());
  c.send_raw("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  auto r = c.read_reply();
  CHECK(r.status == 200);
  CHECK(r.header("Connection") == "close");
  CHECK(c.closed_by_peer(2s));
  SUBCASE("without it the connection stays open") {
    http_client kept(gw.port());
    kept.send_raw(get_request("/healthz"));
    CHECK(kept.read_reply().status == 200);
    CHECK(!kept.closed_by_peer(300ms));
  }
}

TEST_CASE("Expect: 100-continue: a body over the limit is refused before it is sent; one within is invited") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_MAX_BODY_BYTES", "1024"}});
  SUBCASE("over the limit: a 413 straight away, no 100 Continue, nothing stored") {
    http_client c(gw.port());
    c.send_raw(
        "POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
        "Content-Length: 4096\r\n\r\n");
    auto first = c.read_some(2s);
    CHECK(first.starts_with("HTTP/1.1 413 "));
    CHECK(first.find("100 Continue") == std::string::npos);
    CHECK(first.find("payload_too_large") != std::string::npos);
    CHECK(get_json(gw.port(), "/sessions").at("total").as_int64() == 0);
  }
  SUBCASE("within the limit: 100 Continue, then the body, then 201") {
    http_client c(gw.port());
    c.send_raw(
        "POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
        "Content-Length: 2\r\n\r\n");
    auto interim = c.read_some(2s);
    CHECK(interim.starts_with("HTTP/1.1 100 Continue\r\n"));
    c.send_raw("{}");
    CHECK(c.read_reply().status == 201);
  }
}
