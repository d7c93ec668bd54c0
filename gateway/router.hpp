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
  void add(http::verb method, std::string_view pattern, handler h);

  // Fills ctx.path_params and runs the matching handler; api_error and any other
  // exception become error responses here, once, for every route.
  awaitable<handler_result> dispatch(request_context& ctx, const std::vector<std::string>& segments) const;

  // `OPTIONS *` (the server as a whole): a 204 whose Allow lists every method some path takes.
  response options_for_server(unsigned version) const;

 private:
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
};

}  // namespace agw::gateway
