#pragma once
// Maps method + path to a handler. Patterns are segment lists where "{}"
// matches one (decoded) segment. A known path with another method is a 405,
// anything else a 404; both with the contract's JSON error body.
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
  void add(http::verb method, std::string_view pattern, handler h);

  // Fills ctx.path_params and runs the matching handler; api_error and any other
  // exception become error responses here, once, for every route.
  // CORS preflights are answered before routing, and CORS headers added to every answer.
  awaitable<handler_result> dispatch(request_context& ctx, const std::vector<std::string>& segments) const;

 private:
  awaitable<handler_result> route_request(request_context& ctx, const std::vector<std::string>& segments) const;
  struct route {
    http::verb method;
    std::vector<std::string> pattern;
    handler run;
  };
  std::vector<route> routes_;
};

}  // namespace agw::gateway
