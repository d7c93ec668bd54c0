// Connection handling around the sessions API: slow clients are cut off after
// the header timeout, idle keep-alive connections after the idle timeout, and
// keep-alive / pipelining work.
#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <thread>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/session_fixtures.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::fixtures;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

long long ms_since(steady::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0).count();
}

}  // namespace

TEST_CASE("slow clients are disconnected after GATEWAY_HEADER_TIMEOUT") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_HEADER_TIMEOUT", "0.5"}});

  SUBCASE("a client that sends nothing") {
    http_client client(gw.port());
    auto t0 = steady::now();
    CHECK(client.closed_by_peer(4s));
    auto elapsed = ms_since(t0);
    CHECK(elapsed >= 400);
    CHECK(elapsed < 3000);
  }
  SUBCASE("a client that sends half a header") {
    http_client client(gw.port());
    auto t0 = steady::now();
    client.send_raw("GET /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Partial: ab");
    CHECK(client.closed_by_peer(4s));
    auto elapsed = ms_since(t0);
    CHECK(elapsed >= 400);
    CHECK(elapsed < 3000);
  }
  SUBCASE("a client that drips its header one byte at a time") {
    // Activity must not extend the deadline: the timeout covers the whole header.
    http_client client(gw.port());
    const std::string header = "GET /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + std::string(200, 'X');
    auto t0 = steady::now();
    bool closed = false;
    for (std::size_t i = 0; i < header.size() && ms_since(t0) < 4000; ++i) {
      try {
        client.send_raw(header.substr(i, 1));
      } catch (const std::exception&) {
        closed = true;
        break;
      }
      if (client.closed_by_peer(100ms)) {
        closed = true;
        break;
      }
    }
    CHECK(closed);
    CHECK(ms_since(t0) < 2500);
  }
  SUBCASE("a client that sends the header but only part of the body") {
    http_client client(gw.port());
    auto t0 = steady::now();
    client.send_raw(
        "POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
        R"({"title":)");
    CHECK(client.closed_by_peer(4s));
    CHECK(ms_since(t0) < 3000);
    CHECK(get_json(gw.port(), "/sessions").at("total") == 0);
  }
  SUBCASE("slow clients do not hold up others") {
    std::vector<std::unique_ptr<http_client>> idle;
    for (int i = 0; i < 20; ++i) {
      idle.push_back(std::make_unique<http_client>(gw.port()));
      idle.back()->send_raw("GET /healthz HTTP/1.1\r\n");
    }
    auto t0 = steady::now();
    auto r = http_call(gw.port(), "GET", "/healthz");
    CHECK(r.status == 200);
    CHECK(ms_since(t0) < 1000);
    for (auto& c : idle) CHECK(c->closed_by_peer(4s));
  }
  // The server is still healthy.
  CHECK(http_call(gw.port(), "GET", "/healthz").status == 200);
}

TEST_CASE("keep-alive: several requests on one connection") {
  gateway_process gw;
  SUBCASE("two requests one after the other are both answered") {
    http_client client(gw.port());
    auto created = client.request("POST", "/sessions", R"({"title":"ka"})");
    REQUIRE(created.status == 201);
    auto got = client.request("GET", "/sessions/" + str(created.json().at("id")), "", {});
    CHECK(got.status == 200);
    CHECK(got.json() == created.json());
    auto listed = client.request("GET", "/sessions", "", {});
    CHECK(listed.status == 200);
    CHECK(listed.json().at("total") == 1);
    CHECK_FALSE(client.closed_by_peer(200ms));
  }
  SUBCASE("pipelined requests are answered in order") {
    http_client client(gw.port());
    client.send_raw(raw_request("POST", "/sessions", R"({"title":"p1"})", json_headers) +
                    raw_request("POST", "/sessions", R"({"title":"p2"})", json_headers) + raw_request("GET", "/sessions"));
    auto a = client.read_reply();
    auto b = client.read_reply();
    auto c = client.read_reply();
    REQUIRE(a.status == 201);
    REQUIRE(b.status == 201);
    REQUIRE(c.status == 200);
    CHECK(a.json().at("title") == "p1");
    CHECK(b.json().at("title") == "p2");
    CHECK(c.json().at("total") == 2);
    CHECK(c.json().at("sessions").as_array()[0].at("title") == "p2");
  }
  SUBCASE("an error answer keeps the connection") {
    http_client client(gw.port());
    auto bad = client.request("POST", "/sessions", "{oops");
    check_error(bad, 400, "bad_request");
    auto good = client.request("POST", "/sessions", R"({"title":"after"})");
    CHECK(good.status == 201);
  }
  SUBCASE("Connection: close is honoured") {
    http_client client(gw.port());
    auto r = client.request("GET", "/healthz", "", {{"Connection", "close"}});
    CHECK(r.status == 200);
    CHECK(client.closed_by_peer(2s));
  }
  SUBCASE("HTTP/1.0 without keep-alive is closed after the answer") {
    http_client client(gw.port());
    client.send_raw("GET /healthz HTTP/1.0\r\n\r\n");
    auto r = client.read_reply();
    CHECK(r.status == 200);
    CHECK(client.closed_by_peer(2s));
  }
}

TEST_CASE("an idle keep-alive connection is closed after GATEWAY_IDLE_TIMEOUT") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_IDLE_TIMEOUT", "0.5"}});
  http_client client(gw.port());
  CHECK(client.request("GET", "/healthz", "", {}).status == 200);
  auto t0 = steady::now();
  CHECK(client.closed_by_peer(4s));
  CHECK(ms_since(t0) < 3000);
}

TEST_CASE("a slow header on a kept-alive connection is cut off by the header timeout, not the idle timeout") {
  // The settings promise "seconds a client has to send a request's header and body";
  // a second request on a kept-alive connection must not get the (long) idle timeout
  // for its header, or one cheap request buys a slowloris a minute per connection.
  gateway_process gw({{"GATEWAY_HEADER_TIMEOUT", "0.5"}, {"GATEWAY_IDLE_TIMEOUT", "30"}});
  http_client client(gw.port());
  CHECK(client.request("GET", "/healthz", "", {}).status == 200);
  client.send_raw("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Partial: ab");
  auto t0 = steady::now();
  CHECK(client.closed_by_peer(4s));
  CHECK(ms_since(t0) < 3000);
}

TEST_CASE("every io thread accepts; a second server on the port in use fails to start and takes nothing") {
  // Two io threads, each with its own acceptor on the one port (SO_REUSEPORT).
  gateway_process gw(gateway_process::env_map{{"GATEWAY_IO_THREADS", "2"}});
  // Many fresh connections at once: whichever acceptor the kernel picks serves each.
  std::vector<std::thread> clients;
  std::vector<int> statuses(40, 0);
  for (std::size_t i = 0; i < statuses.size(); ++i)
    clients.emplace_back([&, i] { statuses[i] = http_call(gw.port(), "GET", "/sessions").status; });
  for (auto& c : clients) c.join();
  for (int s : statuses) CHECK(s == 200);

  auto second = run_gateway_command({}, {{"GATEWAY_PORT", std::to_string(gw.port())}, {"GATEWAY_IO_THREADS", "2"}}, 10s);
  // Had it joined the port, it would be serving (and time out here) instead of exiting.
  CHECK_FALSE(second.timed_out);
  CHECK(second.status > 0);
  CHECK(second.output.find("Address already in use") != std::string::npos);
  for (int i = 0; i < 20; ++i) CHECK(http_call(gw.port(), "GET", "/readyz").status == 200);
}

TEST_CASE("a second server on the same database fails to start and leaves the first one's journal alone") {
  gateway_process gw;
  const std::string sid = runs::create_mock_session(gw.port(), R"({"tokens":400,"tokens_per_second":100})");
  auto live = runs::start_message(gw.port(), sid, "keep journaling");
  REQUIRE(live->head.status == 200);
  REQUIRE(live->read_until([](const runs::sse_parser& p) { return p.count("token") >= 5; }, 5s));
  auto second = run_gateway_command({}, {{"GATEWAY_DB_PATH", gw.db_path()}}, 10s);
  CHECK_FALSE(second.timed_out);
  CHECK(second.status > 0);
  CHECK(second.output.find("in use by another gateway process") != std::string::npos);
  // The same database by another name (a link to its file, as SQLite follows) is the same
  // database: its journal directory, and so its lock, are named after the file linked to.
  const std::filesystem::path db(gw.db_path());
  const auto alias = db.parent_path() / "alias.db";
  std::filesystem::create_symlink(db, alias);
  auto third = run_gateway_command({}, {{"GATEWAY_DB_PATH", alias.string()}}, 10s);
  std::filesystem::remove(alias);
  CHECK_FALSE(third.timed_out);
  CHECK(third.status > 0);
  CHECK(third.output.find("in use by another gateway process") != std::string::npos);
  // The first goes on, and its journal-only events are still there after a kill -9.
  REQUIRE(live->read_until([](const runs::sse_parser& p) { return p.count("token") >= 20; }, 5s));
  gw.kill9();
  live->pump(100ms);
  const std::int64_t seen = live->parser.last_id();
  gw.start();
  CHECK(runs::get_session(gw.port(), sid).at("last_event_id").as_int64() >= seen);
}
