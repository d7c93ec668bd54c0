#include "core/webhooks/address_policy.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

using agw::core::address_policy;
using agw::core::special_range;
namespace ip = boost::asio::ip;

std::string range_of(const char* text) {
  auto r = special_range(ip::make_address(text));
  return r ? std::string(*r) : "public";
}

}  // namespace

TEST_CASE("address_policy: special ranges are named, public addresses are not") {
  struct row {
    const char* address;
    const char* range;
  };
  const row rows[] = {
      {"127.0.0.1", "loopback"},
      {"127.255.255.254", "loopback"},
      {"10.0.0.1", "private"},
      {"172.16.0.1", "private"},
      {"172.31.255.255", "private"},
      {"172.32.0.1", "public"},
      {"192.168.1.1", "private"},
      {"100.64.0.1", "shared"},
      {"100.127.255.255", "shared"},
      {"100.128.0.1", "public"},
      {"169.254.169.254", "link-local"},
      {"0.0.0.0", "unspecified"},
      {"0.1.2.3", "unspecified"},
      {"224.0.0.1", "multicast"},
      {"239.255.255.255", "multicast"},
      {"255.255.255.255", "broadcast"},
      {"240.0.0.1", "reserved"},
      {"192.0.2.1", "documentation"},
      {"198.18.0.1", "benchmarking"},
      {"8.8.8.8", "public"},
      {"1.1.1.1", "public"},
      {"::1", "loopback"},
      {"::", "unspecified"},
      {"fe80::1", "link-local"},
      {"febf::1", "link-local"},
      {"fc00::1", "private"},
      {"fd12:3456::1", "private"},
      {"ff02::1", "multicast"},
      {"::ffff:127.0.0.1", "loopback"},
      {"::ffff:10.1.2.3", "private"},
      {"::ffff:8.8.8.8", "public"},
      {"64:ff9b::a9fe:a9fe", "link-local"},
      {"2002:7f00:1::", "loopback"},
      {"2001:db8::1", "documentation"},
      {"2606:4700:4700::1111", "public"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.address);
    CHECK(range_of(r.address) == r.range);
  }
}

TEST_CASE("address_policy: private targets are refused unless allowed") {
  const address_policy strict(false, {});
  CHECK(strict.refusal("8.8.8.8", ip::make_address("8.8.8.8")).empty());
  const auto why = strict.refusal("localhost", ip::make_address("127.0.0.1"));
  CHECK(why.find("127.0.0.1") != std::string::npos);
  CHECK(why.find("loopback") != std::string::npos);
  CHECK_FALSE(strict.refusal("x", ip::make_address("169.254.169.254")).empty());

  const address_policy open(true, {});
  CHECK(open.refusal("localhost", ip::make_address("127.0.0.1")).empty());
  CHECK(open.refusal("x", ip::make_address("fe80::1")).empty());
}

TEST_CASE("address_policy: the allowlist lets named hosts and CIDRs through, nothing else") {
  const address_policy listed(false, {"hooks.internal", "10.20.0.0/16", "fd00::/8", "127.0.0.1"});
  CHECK(listed.refusal("hooks.internal", ip::make_address("10.9.9.9")).empty());
  CHECK(listed.refusal("other.internal", ip::make_address("10.20.3.4")).empty());
  CHECK_FALSE(listed.refusal("other.internal", ip::make_address("10.21.3.4")).empty());
  CHECK(listed.refusal("v6", ip::make_address("fd00::5")).empty());
  CHECK_FALSE(listed.refusal("v6", ip::make_address("fc00::5")).empty());
  CHECK(listed.refusal("x", ip::make_address("127.0.0.1")).empty());
  CHECK_FALSE(listed.refusal("x", ip::make_address("127.0.0.2")).empty());
  CHECK(listed.refusal("x", ip::make_address("::ffff:10.20.0.1")).empty());  // mapped form of a listed range
}

TEST_CASE("address_policy: allowlist entries and CIDRs parse strictly") {
  using agw::core::parse_allowlist_entry;
  using agw::core::parse_cidr;
  CHECK(parse_cidr("10.0.0.0/8"));
  CHECK(parse_cidr("10.0.0.0/0"));
  CHECK(parse_cidr("::/0"));
  CHECK(parse_cidr("fe80::/10")->prefix == 10);
  CHECK(parse_cidr("1.2.3.4")->prefix == 32);
  CHECK_FALSE(parse_cidr("10.0.0.0/33"));
  CHECK_FALSE(parse_cidr("fe80::/129"));
  CHECK_FALSE(parse_cidr("10.0.0.0/"));
  CHECK_FALSE(parse_cidr("10.0.0.0/8x"));
  CHECK_FALSE(parse_cidr("10.0.0/8"));
  CHECK(parse_allowlist_entry("Hooks.Example.COM")->host == "hooks.example.com");
  CHECK_FALSE(parse_allowlist_entry(""));
  CHECK_FALSE(parse_allowlist_entry("a b"));
  CHECK_FALSE(parse_allowlist_entry("http://x"));
}
