// Operations limits on the real binary: GATEWAY_MAX_CONNECTIONS (accepted, 503,
// closed), GATEWAY_MAX_RUNS (503 unavailable with Retry-After), GATEWAY_RATE_LIMIT
// (429 too_many_requests with Retry-After, per client), and the header timeout
// against a slowloris crowd that must not slow a normal client down.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::runs;

namespace {

std::string get_request(const std::string& target, const std::string& extra = "") {
  return "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra + "\r\n";
}

// A raw loopback connection; -1 when connect failed.
int connect_raw(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// True when the server has closed fd (EOF or reset), without blocking.
bool closed_by_server(int fd) {
  char byte;
  const auto n = ::recv(fd, &byte, 1, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// One GET /healthz on a fresh connection: its latency in ms (a failure is a huge one).
double healthz_latency_ms(std::uint16_t port) {
  const auto t0 = clock_type::now();
  auto r = http_call(port, "GET", "/healthz", {}, {});
  const double ms = ms_between(t0, clock_type::now());
  return r.status == 200 ? ms : 1e9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

TEST_CASE("limits: over GATEWAY_MAX_CONNECTIONS a connection is accepted, answered 503 with Retry-After, and closed") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_MAX_CONNECTIONS", "3"}});
  std::vector<std::unique_ptr<http_client>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<http_client>(gw.port()));
    held.back()->send_raw(get_request("/healthz"));
    REQUIRE(held.back()->read_reply().status == 200);  // kept alive: counted as open
  }
  http_client over(gw.port());  // the connect itself succeeds
  over.send_raw(get_request("/healthz"));
  auto refused = over.read_reply();
  check_error(refused, 503, "unavailable");
  CHECK(refused.header("Retry-After") == "2");
  CHECK(refused.header("Connection") == "close");
  CHECK(over.closed_by_peer(3s));
  // The held connections are still served; once one goes, a new client is too.
  held[0]->send_raw(get_request("/healthz"));
  CHECK(held[0]->read_reply().status == 200);
  held.pop_back();
  CHECK(eventually([&] { return http_call(gw.port(), "GET", "/healthz", {}, {}).status == 200; }, 5s));
}

TEST_CASE("limits: over GATEWAY_MAX_RUNS a new run is a 503 unavailable with Retry-After that stores nothing") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_MAX_RUNS", "1"}});
  const std::string busy = create_mock_session(gw.port(), R"({"tokens":1000,"tokens_per_second":20})");
  const std::string other = create_session(gw.port());
  auto live = start_message(gw.port(), busy, "long");
  REQUIRE(live->head.status == 200);
  REQUIRE(live->read_until([](const sse_parser& p) { return p.count("token") >= 1; }, 5s));
  auto refused = http_call(gw.port(), "POST", messages_path(other), message_body("one too many"));
  check_error(refused, 503, "unavailable");
  CHECK(!refused.header("Retry-After").empty());
  CHECK(get_messages(gw.port(), other).empty());
  // Once the live run has ended the next one starts.
  CHECK(http_call(gw.port(), "POST", "/sessions/" + busy + "/abort", "", {}).status == 200);
  REQUIRE(live->read_to_end(10s));
  std::unique_ptr<sse_reader> next;
  REQUIRE(eventually(
      [&] {
        next = start_message(gw.port(), other, "now it fits");
        return next->head.status == 200;
      },
      5s));
  REQUIRE(next->read_to_end(10s));
  CHECK(next->parser.frames.back().event == "done");
}

TEST_CASE("limits: GATEWAY_RATE_LIMIT answers 429 too_many_requests with Retry-After, per client, probes exempt") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_RATE_LIMIT", "1"}, {"GATEWAY_RATE_BURST", "3"}});
  http_client c(gw.port());
  for (int i = 0; i < 3; ++i) {
    c.send_raw(get_request("/sessions"));
    REQUIRE(c.read_reply().status == 200);
  }
  c.send_raw(get_request("/sessions"));
  auto limited = c.read_reply();
  check_error(limited, 429, "too_many_requests");
  CHECK(limited.header("Retry-After") == "1");
  CHECK(!limited.header("X-Request-Id").empty());
  // The connection stays usable; the load balancer's probes are not counted.
  c.send_raw(get_request("/healthz"));
  CHECK(c.read_reply().status == 200);
  c.send_raw(get_request("/readyz"));
  CHECK(c.read_reply().status == 200);
  // Without API keys a header names no bucket: a made-up key per request is still this address.
  for (int i = 0; i < 3; ++i) {
    c.send_raw(get_request("/sessions", "Authorization: Bearer made-up-" + std::to_string(i) + "\r\n"));
    CHECK(c.read_reply().status == 429);
  }
  // A token comes back after 1/rate seconds.
  std::this_thread::sleep_for(1100ms);
  c.send_raw(get_request("/sessions"));
  CHECK(c.read_reply().status == 200);
  c.send_raw(get_request("/sessions"));
  CHECK(c.read_reply().status == 429);
}

TEST_CASE("limits: with API keys each valid key has its own rate bucket; unknown keys count against the address") {
  const std::string one = "key-one-0123456789abcdef", two = "key-two-0123456789abcdef";
  gateway_process gw(
      gateway_process::env_map{{"GATEWAY_RATE_LIMIT", "1"}, {"GATEWAY_RATE_BURST", "2"}, {"GATEWAY_API_KEYS", one + "," + two}});
  http_client c(gw.port());
  auto with_key = [](const std::string& key) { return "Authorization: Bearer " + key + "\r\n"; };
  for (int i = 0; i < 2; ++i) {
    c.send_raw(get_request("/sessions", with_key(one)));
    REQUIRE(c.read_reply().status == 200);
  }
  c.send_raw(get_request("/sessions", with_key(one)));
  CHECK(c.read_reply().status == 429);
  c.send_raw(get_request("/sessions", with_key(two)));
  CHECK(c.read_reply().status == 200);
  // A new unknown key per request makes no new bucket: the address's burst, then 429.
  std::vector<unsigned> statuses;
  for (int i = 0; i < 4; ++i) {
    c.send_raw(get_request("/sessions", with_key("unknown-key-" + std::to_string(i) + "-0123456789")));
    statuses.push_back(c.read_reply().status);
  }
  CHECK(statuses == std::vector<unsigned>{401, 401, 429, 429});
}

TEST_CASE("limits: GATEWAY_MAX_RUNS holds under a burst: of 12 runs asked for at once, exactly 2 start") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_MAX_RUNS", "2"}});
  std::vector<std::string> sessions;
  for (int i = 0; i < 12; ++i) sessions.push_back(create_mock_session(gw.port(), R"({"tokens":1000,"tokens_per_second":20})"));
  std::vector<std::unique_ptr<sse_reader>> readers(sessions.size());
  std::vector<std::thread> posting;
  for (std::size_t i = 0; i < sessions.size(); ++i)
    posting.emplace_back([&, i] { readers[i] = start_message(gw.port(), sessions[i], "burst"); });
  for (auto& t : posting) t.join();
  std::size_t started = 0, refused = 0;
  for (const auto& r : readers) {
    if (r->head.status == 200) ++started;
    if (r->head.status == 503) ++refused;
  }
  CHECK(started == 2);
  CHECK(refused == 10);
  // The refused ones stored nothing.
  std::size_t with_messages = 0;
  for (const auto& id : sessions) with_messages += get_messages(gw.port(), id).empty() ? 0 : 1;
  CHECK(with_messages == 2);
}

TEST_CASE("limits: 500 slowloris connections do not slow a normal client, and the header timeout closes them") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_HEADER_TIMEOUT", "2"}});
  std::vector<double> before;
  for (int i = 0; i < 20; ++i) before.push_back(healthz_latency_ms(gw.port()));

  constexpr int crowd = 500;
  std::vector<int> slow;
  for (int i = 0; i < crowd; ++i) {
    int fd = connect_raw(gw.port());
    REQUIRE(fd >= 0);
    slow.push_back(fd);
  }
  const std::string header = get_request("/sessions", "X-Slow: " + std::string(100, 'x') + "\r\n");
  const auto started = clock_type::now();
  std::vector<double> during;
  std::size_t sent = 0;
  // A byte a second on every slow connection; normal requests in between.
  while (clock_type::now() - started < 4s) {
    for (int fd : slow) ::send(fd, header.data() + sent, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    ++sent;
    const auto tick_end = clock_type::now() + 1s;
    while (clock_type::now() < tick_end) {
      during.push_back(healthz_latency_ms(gw.port()));
      std::this_thread::sleep_for(50ms);
    }
  }
  int closed = 0;
  for (int fd : slow) {
    if (closed_by_server(fd)) ++closed;
    ::close(fd);
  }
  const double median_before = median(before), median_during = median(during);
  const double worst_during = *std::max_element(during.begin(), during.end());
  MESSAGE("healthz median " << median_before << " ms before, " << median_during << " ms during (worst " << worst_during << " ms, "
                            << during.size() << " requests); " << closed << "/" << crowd << " slow connections closed after 4 s");
  CHECK(closed == crowd);
  CHECK(median_during <= median_before * 5 + 20);  // a loaded 2-core machine: bounded, not equal
  CHECK(worst_during < 1000);
}
