#include "core/agents/openai/parallel_tools.hpp"

#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <thread>

using namespace agw::core;

namespace {

// Sleeps for args.ms on its worker, then answers with its name: slow enough that
// calls run one after another take the sum of their times.
class sleepy_tool final : public tool {
 public:
  std::string_view name() const override { return "sleepy"; }
  std::string_view description() const override { return "sleeps"; }
  boost::json::object parameters_schema() const override { return {}; }
  tool_result invoke(const boost::json::object& args) const override {
    std::this_thread::sleep_for(std::chrono::milliseconds(args.at("ms").to_number<int>()));
    return {"slept " + std::to_string(args.at("ms").to_number<int>()), 0};
  }
};

std::vector<tool_outcome> run_on_io(tool_runner& runner, const std::vector<run_context::tool_request>& calls) {
  boost::asio::io_context io;
  std::vector<tool_outcome> out;
  auto running = [&]() -> boost::asio::awaitable<void> { out = co_await openai::run_concurrently(runner, calls); };
  boost::asio::co_spawn(io, running(), [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
  });
  io.run();
  return out;
}

}  // namespace

TEST_CASE("parallel_tools: one answer's calls run at the same time, their outcomes in call order") {
  tool_registry tools;
  tools.add(std::make_unique<sleepy_tool>());
  tool_runner runner(tools, 4, std::chrono::seconds(5));
  const std::vector<run_context::tool_request> calls{
      {"a", "sleepy", {{"ms", 300}}}, {"b", "sleepy", {{"ms", 100}}}, {"c", "sleepy", {{"ms", 200}}}, {"d", "nope", {}}};
  const auto started = std::chrono::steady_clock::now();
  const auto outcomes = run_on_io(runner, calls);
  const auto took = std::chrono::steady_clock::now() - started;
  REQUIRE(outcomes.size() == 4);
  CHECK(outcomes[0].result.output == "slept 300");
  CHECK(outcomes[1].result.output == "slept 100");
  CHECK(outcomes[2].result.output == "slept 200");
  CHECK(outcomes[3].status == tool_outcome::kind::unknown_tool);
  // One after another would take 600 ms; together, about the longest (300 ms).
  CHECK(took < std::chrono::milliseconds(550));
  CHECK(run_on_io(runner, {}).empty());
}
