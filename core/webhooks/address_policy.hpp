#pragma once
// Which addresses a callback may be delivered to (the SSRF guard). Loopback,
// private, shared (CGNAT), link-local (the cloud metadata address among them),
// unspecified, multicast, broadcast and reserved ranges are refused unless the
// operator allowed private targets or listed the host / a CIDR holding it.
// Checked at POST time and again on the address the dispatcher connects to,
// so a DNS answer that changes in between (rebinding) is still refused.
#include <boost/asio/ip/address.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agw::core {

struct cidr {
  boost::asio::ip::address network;
  unsigned prefix = 0;
  bool contains(const boost::asio::ip::address& a) const;
};

// "10.0.0.0/8", "fd00::/8", or a bare address (a /32 or /128).
std::optional<cidr> parse_cidr(std::string_view text);

struct allowlist_entry {
  std::string host;           // lower-case host name, when the entry is a name
  std::optional<cidr> range;  // when the entry is an address or CIDR
};
std::optional<allowlist_entry> parse_allowlist_entry(std::string_view text);

// The name of the special range `a` lies in ("loopback", "private", …), or nullopt
// for a public unicast address. IPv4-mapped and NAT64/6to4-embedded IPv4 addresses
// are judged by the IPv4 address they carry.
std::optional<std::string_view> special_range(const boost::asio::ip::address& a);

class address_policy {
 public:
  address_policy(bool allow_private, const std::vector<std::string>& allowlist);

  // Empty when `host` (the URL's host, lower-case) at address `a` may be called;
  // otherwise why not, for the 400 message and the attempt's error.
  std::string refusal(std::string_view host, const boost::asio::ip::address& a) const;
  bool allow_private() const { return allow_private_; }

 private:
  bool allow_private_;
  std::vector<allowlist_entry> allowlist_;
};

}  // namespace agw::core
