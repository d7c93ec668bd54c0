#include "core/session_state.hpp"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>

#include "core/api_error.hpp"

namespace {

using agw::core::api_error;
using agw::core::parse_state_key;
using agw::core::parse_state_patch;
using agw::core::session_record;
using agw::core::state_owner;
using agw::core::state_scope;

session_record session_of(std::string user, std::string tenant = "") {
  session_record s;
  s.id = "s1";
  if (!user.empty()) s.scopes["user"] = user;
  if (!tenant.empty()) s.scopes["tenant"] = tenant;
  return s;
}

}  // namespace

TEST_CASE("session state: keys name their scope by prefix") {
  CHECK(parse_state_key("step")->scope == state_scope::session);
  CHECK(parse_state_key("user:lang")->scope == state_scope::user);
  CHECK(parse_state_key("user:lang")->name == "lang");
  CHECK(parse_state_key("app:motd")->scope == state_scope::app);
  CHECK(parse_state_key("temp:x")->scope == state_scope::temp);
  for (const char* bad : {"", "user:", "other:x", "a:b", "user:a:b", "tab\tkey"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_state_key(bad));
  }
  CHECK_FALSE(parse_state_key(std::string(129, 'k')));
  CHECK(parse_state_key(std::string(128, 'k')));
}

TEST_CASE("session state: owners keep sessions, users and tenants apart") {
  CHECK(*state_owner(state_scope::session, session_of("ann")) == "s1");
  CHECK(*state_owner(state_scope::user, session_of("ann")) == "\nann");
  CHECK(*state_owner(state_scope::user, session_of("ann", "t1")) == "t1\nann");
  CHECK_FALSE(state_owner(state_scope::user, session_of("")));
  CHECK(*state_owner(state_scope::app, session_of("")) == "");
  CHECK(*state_owner(state_scope::app, session_of("", "t1")) == "t1");
}

TEST_CASE("session state: a PATCH is checked whole") {
  auto ok = parse_state_patch(boost::json::parse(R"({"a":1,"user:b":{"x":[1]},"app:c":null})"), session_of("ann"));
  REQUIRE(ok.size() == 3);
  CHECK(ok[0].value == "1");
  CHECK(ok[1].value == R"({"x":[1]})");
  CHECK_FALSE(ok[2].value);  // null deletes
  for (const char* bad : {"[]", "{}", "5", R"({"a":1,"bad:x":2})", R"({"a":1,"user:b":2})"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_state_patch(boost::json::parse(bad), session_of("")), api_error);
  }
  const std::string big = R"({"a":")" + std::string(16 * 1024, 'x') + "\"}";
  CHECK_THROWS_AS(parse_state_patch(boost::json::parse(big), session_of("")), api_error);
}
