// GET / (and HEAD /): the browser page, gateway/web/index.html, embedded at build
// time (cmake/embed_file.cmake). Its inline script and style are allowed by their
// SHA-256 hashes in the Content-Security-Policy, so nothing else can run on it.
#include <openssl/evp.h>

#include <string>
#include <string_view>

#include "gateway/api/handlers.hpp"
#include "gateway/app_context.hpp"

namespace agw::gateway::web {
extern const std::string_view index_html;  // generated: build/gateway/generated/web_index_html.cpp
}

namespace agw::gateway::api {
namespace {

// 'sha256-<base64>' of one inline block, as CSP wants it.
std::string csp_hash(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha256(), nullptr);
  std::string b64(4 * ((size + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()), digest, static_cast<int>(size));
  b64.resize(static_cast<std::size_t>(n));
  std::string out("'sha256-");
  out.append(b64).append("'");
  return out;
}

// The hashes of every `<tag>…</tag>` block (attribute-less open tag) in the page.
std::string inline_hashes(std::string_view html, std::string_view tag) {
  // (Appended piece by piece: GCC 12 warns falsely on "<" + std::string(...).)
  std::string open("<");
  open.append(tag).append(">");
  std::string close("</");
  close.append(tag).append(">");
  std::string out;
  for (std::size_t at = html.find(open); at != std::string_view::npos; at = html.find(open, at)) {
    const std::size_t start = at + open.size();
    const std::size_t end = html.find(close, start);
    if (end == std::string_view::npos) break;
    if (!out.empty()) out += ' ';
    out += csp_hash(html.substr(start, end - start));
    at = end + close.size();
  }
  return out.empty() ? "'none'" : out;
}

const std::string& content_security_policy() {
  static const std::string policy = [] {
    std::string p("default-src 'self'; script-src ");
    p.append(inline_hashes(web::index_html, "script"));
    p.append("; style-src ").append(inline_hashes(web::index_html, "style"));
    p.append(
        "; connect-src 'self'; img-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    return p;
  }();
  return policy;
}

}  // namespace

awaitable<handler_result> index_page(request_context& ctx) {
  response res{http::status::ok, ctx.req.version()};
  res.set(http::field::content_type, "text/html; charset=utf-8");
  res.set(http::field::cache_control, "no-cache");
  res.set("Content-Security-Policy", content_security_policy());
  res.set("X-Content-Type-Options", "nosniff");
  res.set(http::field::x_frame_options, "DENY");
  res.set("Referrer-Policy", "no-referrer");
  res.body() = std::string(web::index_html);
  res.prepare_payload();
  // HEAD: the same headers (Content-Length included), no body.
  if (ctx.req.method() == http::verb::head) res.body().clear();
  co_return res;
}

}  // namespace agw::gateway::api
