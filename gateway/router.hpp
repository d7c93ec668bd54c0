#pragma once
// Maps method + path to a handler. Patterns are segment lists where "{}"
// matches one (decoded) segment. HEAD runs a path's GET handler unless HEAD is
// registered on its own (the connection drops the body); OPTIONS on a known path
// is a 204 with Allow. A known path with another method is a 405, anything else
// a 404; both with the contract's JSON error body.
// Immutable after start-up: dispatch() is safe from every connection at once.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gateway/http_types.hpp"
#include "gateway/request_context.hpp"

namespace agw::gateway {

// nullopt: the handler already wrote its whole answer to the stream (SSE).
using handler_result = std::optional<response>;
using handler = std::function<awaitable<handler_result>(request_context&)>;

class router {
 public:
  // Throws std::length_error past core::request_counts::max_routes (the metrics table's rows).
  void add(http::verb method, std::string_view pattern, handler h);

  // Each route's method and pattern ("/sessions/{id}"), in the order added: the
  // metrics' route labels, indexed as core::metrics::requests counts them.
  struct route_name {
    std::string method;
    std::string pattern;
  };
  const std::vector<route_name>& route_names() const { return names_; }

  // Fills ctx.path_params and runs the matching handler; api_error and any other
  // exception become error responses here, once, for every route.
  // CORS preflights are answered before routing, and CORS headers added to every answer.
  awaitable<handler_result> dispatch(request_context& ctx, const std::vector<std::string>& segments) const;

  // `OPTIONS *` (the server as a whole): a 204 whose Allow lists every method some path takes.
  response options_for_server(unsigned version) const;

 private:
  // Sets route_index to the matched route's (unchanged when none matched).
  awaitable<handler_result> route_request(request_context& ctx, const std::vector<std::string>& segments,
                                          std::size_t& route_index) const;
  struct route {
    http::verb method;
    std::vector<std::string> pattern;
    handler run;
  };
  // The route serving (method, path), if any, and every method the path takes.
  struct match {
    const route* found = nullptr;
    std::vector<std::string> params;
    std::vector<http::verb> methods;  // in registration order
  };
  match find(http::verb method, const std::vector<std::string>& segments) const;
  // The Allow value: the path's methods once each, HEAD after GET where GET serves it, and OPTIONS.
  static std::string allow_header(const std::vector<http::verb>& methods);
  std::vector<route> routes_;
  std::vector<route_name> names_;
};

}  // namespace agw::gateway
