// Sessions survive restarts: a graceful SIGTERM, and a kill -9 in the middle of
// a stream of writes (every session whose 201 reached the client is there, with
// identical JSON).
#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/session_fixtures.hpp"

using namespace agw::test;
using namespace agw::test::fixtures;
using namespace std::chrono_literals;

namespace {

std::string body_for(int i) {
  return R"({"title":"session )" + std::to_string(i) + R"(","agent_name":"agent-)" + std::to_string(i % 3) +
         R"(","config":{"provider":"mock","temperature":0.25,"max_tokens":)" + std::to_string(10 + i) +
         R"(,"mock":{"tokens":3}},"scopes":{"org":"o)" + std::to_string(i % 2) + R"("},"metadata":{"i":")" + std::to_string(i) +
         R"(","unicode":"ü✓"}})";
}

}  // namespace

TEST_CASE("SIGTERM exits 0 and a restart on the same database has every session") {
  gateway_process gw;
  std::vector<boost::json::object> created;
  for (int i = 0; i < 20; ++i) created.push_back(create_session(gw.port(), body_for(i)));
  // Some later changes that must survive too.
  auto patched = http_call(gw.port(), "PATCH", "/sessions/" + str(created[3].at("id")),
                           R"({"title":"patched","status":"inactive","metadata":{"x":"y"},"config":{"model":"m"}})");
  REQUIRE(patched.status == 200);
  created[3] = patched.json().as_object();
  REQUIRE(http_call(gw.port(), "DELETE", "/sessions/" + str(created[7].at("id"))).status == 204);
  const std::string deleted_id = str(created[7].at("id"));
  created.erase(created.begin() + 7);
  const auto list_before = get_json(gw.port(), "/sessions?limit=500");
  REQUIRE(list_before.at("total") == 19);

  CHECK(gw.terminate() == 0);
  gw.start();

  CHECK(http_call(gw.port(), "GET", "/readyz").status == 200);
  CHECK(get_json(gw.port(), "/sessions?limit=500") == list_before);
  for (const auto& s : created) {
    INFO("session " << str(s.at("id")));
    CHECK(get_json(gw.port(), "/sessions/" + str(s.at("id"))) == boost::json::value(s));
  }
  check_error(http_call(gw.port(), "GET", "/sessions/" + deleted_id), 404, "not_found");
  // Filters still work on the reopened database.
  auto inactive = get_json(gw.port(), "/sessions?status=inactive");
  CHECK(inactive.at("total") == 1);
  CHECK(inactive.at("sessions").as_array()[0] == boost::json::value(created[3]));
  CHECK(get_json(gw.port(), "/sessions?metadata.i=12").at("total") == 1);
  // And it takes new writes.
  create_session(gw.port(), R"({"title":"after restart"})");
  CHECK(get_json(gw.port(), "/sessions").at("total") == 20);

  // A second graceful cycle, with nothing in flight, keeps it all again.
  const auto list_again = get_json(gw.port(), "/sessions?limit=500");
  CHECK(gw.terminate() == 0);
  gw.start();
  CHECK(get_json(gw.port(), "/sessions?limit=500") == list_again);
}

TEST_CASE("kill -9 during writes: every session whose 201 was received survives, identical") {
  gateway_process gw;
  // A few sessions written before the crash, at rest.
  std::map<std::string, boost::json::object> acknowledged;
  for (int i = 0; i < 5; ++i) {
    auto s = create_session(gw.port(), body_for(i));
    acknowledged[str(s.at("id"))] = s;
  }
  // Then writers hammering the server while it is killed.
  std::mutex mutex;
  std::atomic<int> received{0};
  std::atomic<bool> stop{false};
  const auto port = gw.port();
  auto writer = [&](int base) {
    for (int i = 0; !stop; ++i) {
      try {
        http_client client(port, 3s);
        auto r = client.request("POST", "/sessions", body_for(base + i));
        if (r.status != 201) return;
        auto s = boost::json::parse(r.body).as_object();
        std::lock_guard lock(mutex);
        acknowledged[str(s.at("id"))] = s;
        ++received;
      } catch (const std::exception&) {
        return;  // the server is gone
      }
    }
  };
  std::vector<std::thread> writers;
  for (int w = 0; w < 3; ++w) writers.emplace_back(writer, 1000 * (w + 1));
  // Kill once a good number of writes went through (bounded wait).
  for (int i = 0; i < 500 && received < 60; ++i) std::this_thread::sleep_for(10ms);
  gw.kill9();
  stop = true;
  for (auto& t : writers) t.join();
  CHECK(received >= 60);

  gw.start();
  CHECK(http_call(gw.port(), "GET", "/readyz").status == 200);
  auto listed = get_json(gw.port(), "/sessions?limit=500");
  CHECK(listed.at("total").as_int64() >= static_cast<std::int64_t>(acknowledged.size()));
  std::size_t missing = 0, different = 0;
  for (const auto& [id, s] : acknowledged) {
    auto r = http_call(gw.port(), "GET", "/sessions/" + id);
    if (r.status != 200) {
      ++missing;
      continue;
    }
    INFO("session " << id);
    CHECK(r.json() == boost::json::value(s));
    if (r.json() != boost::json::value(s)) ++different;
  }
  CHECK(missing == 0);
  CHECK(different == 0);
  // The reopened database takes writes again.
  create_session(gw.port(), R"({"title":"after crash"})");
}
