// Session labels end to end (docs/sessions.md, "Labels"): set at create, changed by
// PATCH labels_add/labels_remove, added by an agent profile, and GET /sessions?label=
// ANDed with each other and with the other filters, paged as every list is.
#include <doctest/doctest.h>

#include <fstream>
#include <set>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/session_fixtures.hpp"

using namespace agw::test;
using namespace agw::test::fixtures;

namespace {

std::set<std::string> labels_of(const boost::json::value& s) {
  std::set<std::string> out;
  for (const auto& l : s.at("labels").as_array()) out.insert(str(l));
  return out;
}

std::set<std::string> listed(std::uint16_t port, const std::string& query) {
  auto page = get_json(port, "/sessions?" + query);
  std::set<std::string> out;
  for (const auto& s : page.at("sessions").as_array()) out.insert(str(s.at("id")));
  return out;
}

}  // namespace

TEST_CASE("session labels: create, add, remove, filter with AND") {
  gateway_process gw;
  const auto port = gw.port();
  auto a = create_session(port, R"({"labels":["vip","support"],"metadata":{"team":"x"}})");
  auto b = create_session(port, R"({"labels":["vip"]})");
  auto c = create_session(port, R"({"metadata":{"team":"x"}})");
  const std::string ida = str(a.at("id")), idb = str(b.at("id")), idc = str(c.at("id"));
  CHECK(labels_of(a) == std::set<std::string>{"support", "vip"});
  CHECK(a.at("labels").as_array().at(0) == "support");  // a set: sorted, once each

  CHECK(listed(port, "label=vip") == std::set<std::string>{ida, idb});
  CHECK(listed(port, "label=vip&label=support") == std::set<std::string>{ida});
  CHECK(listed(port, "label=vip&metadata.team=x") == std::set<std::string>{ida});
  CHECK(listed(port, "label=nobody").empty());

  // Labels accumulate: labels_add adds (again is a no-op), labels_remove removes.
  auto patched = http_call(port, "PATCH", "/sessions/" + idc, R"({"labels_add":["vip","escalated","vip"]})");
  REQUIRE(patched.status == 200);
  CHECK(labels_of(patched.json()) == std::set<std::string>{"escalated", "vip"});
  CHECK(listed(port, "label=vip&metadata.team=x") == std::set<std::string>{ida, idc});
  patched = http_call(port, "PATCH", "/sessions/" + ida, R"({"labels_remove":["support","never-there"]})");
  REQUIRE(patched.status == 200);
  CHECK(labels_of(patched.json()) == std::set<std::string>{"vip"});
  CHECK(listed(port, "label=support").empty());

  // Paged as today: total counts every match.
  auto page = get_json(port, "/sessions?label=vip&limit=1&offset=1");
  CHECK(page.at("total") == 3);
  CHECK(page.at("sessions").as_array().size() == 1);

  // Deleting a session drops it from the label index.
  REQUIRE(http_call(port, "DELETE", "/sessions/" + idb).status == 204);
  CHECK(listed(port, "label=vip") == std::set<std::string>{ida, idc});
}

TEST_CASE("session labels: bad input is a 400 and changes nothing") {
  gateway_process gw;
  const auto port = gw.port();
  auto s = create_session(port, R"({"labels":["keep"]})");
  const std::string id = str(s.at("id"));
  const auto before = get_json(port, "/sessions/" + id);
  std::string too_many = R"({"labels_add":[)";
  for (int i = 0; i < 32; ++i) too_many += (i ? ",\"l" : "\"l") + std::to_string(i) + "\"";
  too_many += "]}";
  for (const std::string& body : {std::string(R"({"labels_add":"vip"})"), std::string(R"({"labels_add":[""]})"),
                                  std::string(R"({"labels_add":["has space"]})"), std::string(R"({"labels_add":[5]})"),
                                  std::string(R"({"labels":["x"]})"), std::string(R"({"labels_add":["ok"],"title":5})"), too_many,
                                  std::string(R"({"labels_add":[")") + std::string(65, 'a') + "\"]}"}) {
    INFO("body " << body);
    check_error(http_call(port, "PATCH", "/sessions/" + id, body), 400, "bad_request");
  }
  CHECK(get_json(port, "/sessions/" + id) == before);
  check_error(http_call(port, "POST", "/sessions", R"({"labels":"vip"})"), 400, "bad_request");
  check_error(http_call(port, "GET", "/sessions?label="), 400, "bad_request");
  check_error(http_call(port, "GET", "/sessions?label=a%20b"), 400, "bad_request");
  CHECK(get_json(port, "/sessions").at("total") == 1);
}

TEST_CASE("session labels: an agent profile's labels join every session created for it") {
  temp_dir dir;
  const auto profiles = (dir.path() / "profiles.json").string();
  std::ofstream(profiles) << R"({"profiles":{"triage":{"provider":"mock","labels":["triage","auto"],)"
                             R"("event_webhook_url":"https://hooks.example/triage"}}})";
  gateway_process gw({{"GATEWAY_AGENT_PROFILES", profiles}});
  const auto port = gw.port();
  auto s = create_session(port, R"({"agent_name":"triage","labels":["vip"]})");
  CHECK(labels_of(s) == std::set<std::string>{"auto", "triage", "vip"});
  // The profile's event webhook too, unless the session names its own.
  CHECK(s.at("event_webhook_url") == "https://hooks.example/triage");
  auto other = create_session(port, R"({"labels":["vip"]})");
  CHECK(listed(port, "label=triage") == std::set<std::string>{str(s.at("id"))});
  CHECK(listed(port, "label=vip").size() == 2);
  (void)other;
}
