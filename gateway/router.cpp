#include "gateway/router.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "core/api_error.hpp"
#include "core/storage/store_error.hpp"
#include "core/store_executor.hpp"
#include "gateway/access_log.hpp"
#include "gateway/app_context.hpp"
#include "gateway/cors.hpp"
#include "gateway/json_response.hpp"
#include "gateway/request_guard.hpp"

namespace agw::gateway {
namespace {

std::vector<std::string> split_pattern(std::string_view pattern) {
  std::vector<std::string> out;
  while (!pattern.empty()) {
    if (pattern.front() == '/') pattern.remove_prefix(1);
    if (pattern.empty()) break;  // "/" is the root: no segments, as split() makes of a request for it
    auto slash = pattern.find('/');
    out.emplace_back(pattern.substr(0, slash));
    pattern.remove_prefix(slash == std::string_view::npos ? pattern.size() : slash);
  }
  return out;
}

bool matches(const std::vector<std::string>& pattern, const std::vector<std::string>& segments,
             std::vector<std::string>& params) {
  if (pattern.size() != segments.size()) return false;
  params.clear();
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == "{}")
      params.push_back(segments[i]);
    else if (pattern[i] != segments[i])
      return false;
  }
  return true;
}

}  // namespace

void router::add(http::verb method, std::string_view pattern, handler h) {
  if (routes_.size() >= core::request_counts::max_routes)
    throw std::length_error("router: too many routes for the metrics table");
  routes_.push_back({method, split_pattern(pattern), std::move(h)});
  std::string shown(pattern);
  for (auto at = shown.find("{}"); at != std::string::npos; at = shown.find("{}", at)) shown.replace(at, 2, "{id}");
  names_.push_back({std::string(http::to_string(method)), shown.empty() ? "/" : shown});
}

router::match router::find(http::verb method, const std::vector<std::string>& segments) const {
  match out;
  const route* get_route = nullptr;
  std::vector<std::string> get_params;
  std::vector<std::string> params;
  bool explicit_head = false;
  for (const auto& r : routes_) {
    if (!matches(r.pattern, segments, params)) continue;
    out.methods.push_back(r.method);
    explicit_head = explicit_head || r.method == http::verb::head;
    if (r.method == method && !out.found) {
      out.found = &r;
      out.params = params;
    }
    if (r.method == http::verb::get && !get_route) {
      get_route = &r;
      get_params = params;
    }
  }
  // HEAD is GET without the body (RFC 9110 9.3.2): a GET route serves it unless HEAD has its own.
  if (!out.found && method == http::verb::head && get_route && !explicit_head) {
    out.found = get_route;
    out.params = std::move(get_params);
  }
  return out;
}

std::string router::allow_header(const std::vector<http::verb>& methods) {
  std::string allowed;
  const bool explicit_head = std::find(methods.begin(), methods.end(), http::verb::head) != methods.end();
  std::vector<http::verb> listed;
  auto append = [&allowed, &listed](http::verb m) {
    if (std::find(listed.begin(), listed.end(), m) != listed.end()) return;  // each method once
    listed.push_back(m);
    if (!allowed.empty()) allowed += ", ";
    allowed += std::string(http::to_string(m));
  };
  for (auto m : methods) {
    append(m);
    if (m == http::verb::get && !explicit_head) append(http::verb::head);
  }
  append(http::verb::options);
  return allowed;
}

response router::options_for_server(unsigned version) const {
  std::vector<http::verb> methods;
  for (const auto& r : routes_) methods.push_back(r.method);
  auto res = empty_response(http::status::no_content, version);
  res.erase(http::field::content_length);  // a 204 has none (RFC 9110 8.6)
  res.set(http::field::allow, allow_header(methods));
  return res;
}

awaitable<handler_result> router::dispatch(request_context& ctx, const std::vector<std::string>& segments) const {
  const auto& config = ctx.app.config;
  if (auto preflight = answer_cors_preflight(config, ctx.req)) co_return preflight;
  const auto started = std::chrono::steady_clock::now();
  std::size_t route_index = core::request_counts::unmatched;
  auto routing = route_request(ctx, segments, route_index);
  auto result = co_await std::move(routing);
  if (result) add_cors_headers(config, ctx.req, result->base());
  // A handler that answered with a stream (nullopt) sent a 200 head.
  auto& stats = ctx.app.stats;
  stats.requests.count(route_index, result ? result->result_int() : 200);
  stats.request_seconds.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  co_return result;
}

awaitable<handler_result> router::route_request(request_context& ctx, const std::vector<std::string>& segments,
                                                std::size_t& route_index) const {
  auto m = find(ctx.req.method(), segments);
  const unsigned version = ctx.req.version();
  if (!m.found) {
    if (m.methods.empty()) co_return error_response({core::error_code::not_found, "no such route"}, version);
    if (ctx.req.method() == http::verb::options) {
      // OPTIONS on a known path: what it takes. (CORS preflight headers are added in front of this.)
      auto res = empty_response(http::status::no_content, version);
      res.erase(http::field::content_length);  // a 204 has none (RFC 9110 8.6)
      res.set(http::field::allow, allow_header(m.methods));
      co_return res;
    }
    auto res = error_response({core::error_code::method_not_allowed, "method not allowed on this path"}, version);
    res.set(http::field::allow, allow_header(m.methods));
    co_return res;
  }
  route_index = static_cast<std::size_t>(m.found - routes_.data());
  ctx.path_params = std::move(m.params);
  const route* found = m.found;
  // Exceptions are translated here and nowhere else.
  std::exception_ptr failure;
  try {
    auto guarding = guard_request(ctx, segments);
    if (auto refused = co_await std::move(guarding)) co_return refused;
    co_return co_await found->run(ctx);
  } catch (...) {
    failure = std::current_exception();
  }
  try {
    std::rethrow_exception(failure);
  } catch (const core::api_error& e) {
    co_return error_response(e, version);
  } catch (const core::store_busy& e) {
    co_return error_response({core::error_code::unavailable, "storage is overloaded, retry later"}, version);
  } catch (const core::store_error& e) {
    spdlog::error("storage error request_id={} on {} {}: {}", ctx.request_id, std::string(http::to_string(ctx.req.method())),
                  loggable_path(ctx.req.target()), e.what());
    co_return error_response({core::error_code::unavailable, "storage is unavailable"}, version);
  } catch (const std::exception& e) {
    spdlog::error("internal error request_id={} on {} {}: {}", ctx.request_id, std::string(http::to_string(ctx.req.method())),
                  loggable_path(ctx.req.target()), e.what());
    co_return error_response({core::error_code::internal, "internal error"}, version);
  }
}

}  // namespace agw::gateway
