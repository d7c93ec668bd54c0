#include "core/tools/tool_runner.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>

namespace agw::core {

namespace net = boost::asio;

tool_runner::tool_runner(const tool_registry& tools, std::size_t threads, std::chrono::duration<double> timeout)
    : tools_(tools), pool_(threads), timeout_(timeout) {}

tool_runner::~tool_runner() {
  pool_.stop();
  pool_.join();
}

net::awaitable<tool_outcome> tool_runner::run(std::string name, boost::json::object args) {
  const tool* t = tools_.find(name);
  if (!t) co_return tool_outcome{{"unknown tool '" + name + "'", 127}, tool_outcome::kind::unknown_tool};
  auto executor = co_await net::this_coro::executor;
  // Shared between the worker and this coroutine; touched only on `executor`.
  struct state {
    explicit state(net::any_io_executor ex) : timer(ex) {}
    net::steady_timer timer;
    std::optional<tool_result> result;
  };
  auto s = std::make_shared<state>(executor);
  s->timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout_));
  net::post(pool_, [s, t, args = std::move(args), executor] {
    tool_result r;
    try {
      r = t->invoke(args);
    } catch (const std::exception& e) {
      r = {std::string("tool failed: ") + e.what(), 1};
    }
    net::post(executor, [s, r = std::move(r)]() mutable {
      s->result = std::move(r);
      s->timer.cancel();
    });
  });
  co_await s->timer.async_wait(net::as_tuple(net::use_awaitable));
  if (!s->result) co_return tool_outcome{{"tool '" + name + "' timed out", 124}, tool_outcome::kind::timed_out};
  auto kind = s->result->exit_code == 0 ? tool_outcome::kind::ok : tool_outcome::kind::failed;
  co_return tool_outcome{std::move(*s->result), kind};
}

}  // namespace agw::core
