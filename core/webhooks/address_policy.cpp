#include "core/webhooks/address_policy.hpp"

#include <algorithm>
#include <array>
#include <charconv>

namespace agw::core {

namespace ip = boost::asio::ip;

namespace {

bool prefix_matches(const unsigned char* a, const unsigned char* b, unsigned prefix) {
  const unsigned whole = prefix / 8, rest = prefix % 8;
  if (!std::equal(a, a + whole, b)) return false;
  if (rest == 0) return true;
  const auto mask = static_cast<unsigned char>(0xff << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

struct v4_range {
  std::uint32_t base;
  unsigned prefix;
  std::string_view name;
};

// IANA special-purpose IPv4 ranges a callback must not reach.
constexpr std::array<v4_range, 13> v4_special{{
    {0x00000000, 8, "unspecified"},     // 0.0.0.0/8 "this network"
    {0x0a000000, 8, "private"},         // 10.0.0.0/8
    {0x64400000, 10, "shared"},         // 100.64.0.0/10 carrier-grade NAT
    {0x7f000000, 8, "loopback"},        // 127.0.0.0/8
    {0xa9fe0000, 16, "link-local"},     // 169.254.0.0/16, cloud metadata lives here
    {0xac100000, 12, "private"},        // 172.16.0.0/12
    {0xc0000000, 24, "reserved"},       // 192.0.0.0/24 protocol assignments
    {0xc0000200, 24, "documentation"},  // 192.0.2.0/24
    {0xc0a80000, 16, "private"},        // 192.168.0.0/16
    {0xc6120000, 15, "benchmarking"},   // 198.18.0.0/15
    {0xe0000000, 4, "multicast"},       // 224.0.0.0/4
    {0xf0000000, 4, "reserved"},        // 240.0.0.0/4, 255.255.255.255 broadcast included
    {0xffffffff, 32, "broadcast"},
}};

std::optional<std::string_view> special_v4(const ip::address_v4& a) {
  const std::uint32_t v = a.to_uint();
  std::optional<std::string_view> found;
  for (const auto& r : v4_special) {
    const std::uint32_t mask = r.prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - r.prefix);
    if ((v & mask) == r.base) found = r.name;  // later, narrower entries win (broadcast over reserved)
  }
  return found;
}

}  // namespace

bool cidr::contains(const ip::address& a) const {
  if (a.is_v4() != network.is_v4()) {
    // An IPv4-mapped IPv6 address matches an IPv4 range and the other way round.
    if (a.is_v6() && a.to_v6().is_v4_mapped()) return contains(ip::make_address_v4(ip::v4_mapped, a.to_v6()));
    return false;
  }
  if (a.is_v4()) {
    auto x = a.to_v4().to_bytes(), n = network.to_v4().to_bytes();
    return prefix_matches(x.data(), n.data(), prefix);
  }
  auto x = a.to_v6().to_bytes(), n = network.to_v6().to_bytes();
  return prefix_matches(x.data(), n.data(), prefix);
}

std::optional<cidr> parse_cidr(std::string_view text) {
  auto slash = text.find('/');
  boost::system::error_code ec;
  auto address = ip::make_address(std::string(text.substr(0, slash)), ec);
  if (ec) return std::nullopt;
  unsigned max = address.is_v4() ? 32 : 128;
  unsigned prefix = max;
  if (slash != std::string_view::npos) {
    auto digits = text.substr(slash + 1);
    auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
    if (err != std::errc() || end != digits.data() + digits.size() || digits.empty() || prefix > max) return std::nullopt;
  }
  return cidr{address, prefix};
}

std::optional<allowlist_entry> parse_allowlist_entry(std::string_view text) {
  if (text.empty() || text.size() > 253) return std::nullopt;
  if (auto range = parse_cidr(text)) return allowlist_entry{"", range};
  // Otherwise a host name: letters, digits, '-', '.'.
  std::string host;
  for (char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    if (!ok) return std::nullopt;
    host.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
  }
  return allowlist_entry{host, std::nullopt};
}

std::optional<std::string_view> special_range(const ip::address& a) {
  if (a.is_v4()) return special_v4(a.to_v4());
  const auto v6 = a.to_v6();
  if (v6.is_v4_mapped()) return special_v4(ip::make_address_v4(ip::v4_mapped, v6));
  const auto b = v6.to_bytes();
  if (v6.is_unspecified()) return "unspecified";
  if (v6.is_loopback()) return "loopback";
  if (b[0] == 0xff) return "multicast";                            // ff00::/8
  if ((b[0] & 0xfe) == 0xfc) return "private";                     // fc00::/7 unique local
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return "link-local";  // fe80::/10
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return "private";     // fec0::/10 site-local (deprecated)
  // Addresses that carry an IPv4 address inside: judge that one.
  static const unsigned char nat64[12] = {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};  // 64:ff9b::/96
  if (std::equal(nat64, nat64 + 12, b.data())) return special_v4(ip::address_v4({b[12], b[13], b[14], b[15]}));
  if (b[0] == 0x20 && b[1] == 0x02) return special_v4(ip::address_v4({b[2], b[3], b[4], b[5]}));  // 2002::/16 6to4
  bool v4_compatible = std::all_of(b.begin(), b.begin() + 12, [](unsigned char c) { return c == 0; });
  if (v4_compatible) return special_v4(ip::address_v4({b[12], b[13], b[14], b[15]}));        // ::a.b.c.d (deprecated)
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return "documentation";  // 2001:db8::/32
  return std::nullopt;
}

address_policy::address_policy(bool allow_private, const std::vector<std::string>& allowlist) : allow_private_(allow_private) {
  for (const auto& text : allowlist)
    if (auto entry = parse_allowlist_entry(text)) allowlist_.push_back(std::move(*entry));
}

std::string address_policy::refusal(std::string_view host, const ip::address& a) const {
  auto range = special_range(a);
  if (!range || allow_private_) return "";
  for (const auto& entry : allowlist_) {
    if (entry.range && entry.range->contains(a)) return "";
    if (!entry.host.empty() && entry.host == host) return "";
  }
  return "callback_url resolves to " + a.to_string() + ", a " + std::string(*range) +
         " address (set GATEWAY_WEBHOOK_ALLOW_PRIVATE=1 or GATEWAY_WEBHOOK_ALLOWLIST to allow it)";
}

}  // namespace agw::core
