// Start-up configuration: a bad value stops start-up with a non-zero exit and a
// message naming the setting; --help lists the settings clients rely on.
// Every run is bounded (run_gateway_bounded kills the process at its deadline),
// so a value that is wrongly accepted fails the test instead of hanging it.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/support/gateway_process.hpp"
#include "tests/support/session_fixtures.hpp"

using namespace agw::test;
using namespace agw::test::fixtures;
using namespace std::chrono_literals;

namespace {

// Each of a process's threads by name, with its nice value (/proc/PID/task/TID/stat:
// field 19, counted after the name's closing parenthesis as field 3).
std::multimap<std::string, int> thread_nices(pid_t pid) {
  std::multimap<std::string, int> out;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream comm(task.path() / "comm"), stat(task.path() / "stat");
    std::string name, line;
    std::getline(comm, name);
    std::getline(stat, line);
    std::istringstream fields(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19 && fields >> field; ++i) {
    }
    out.emplace(name, std::stoi(field));
  }
  return out;
}

}  // namespace

TEST_CASE("a bad setting stops start-up with a message naming it") {
  struct config_case {
    std::vector<std::string> args;
    gateway_process::env_map env;
    std::string named;  // the setting the message must name
  };
  const std::vector<config_case> cases = {
      {{}, {{"GATEWAY_PORT", "abc"}}, "GATEWAY_PORT"},
      {{}, {{"GATEWAY_PORT", "70000"}}, "GATEWAY_PORT"},
      {{}, {{"GATEWAY_PORT", "-1"}}, "GATEWAY_PORT"},
      {{}, {{"GATEWAY_SSE_HEARTBEAT_INTERVAL", "-1"}}, "GATEWAY_SSE_HEARTBEAT_INTERVAL"},
      {{}, {{"GATEWAY_SSE_HEARTBEAT_INTERVAL", "fast"}}, "GATEWAY_SSE_HEARTBEAT_INTERVAL"},
      {{}, {{"GATEWAY_SSE_HEARTBEAT_INTERVAL", "0"}}, "GATEWAY_SSE_HEARTBEAT_INTERVAL"},
      {{}, {{"GATEWAY_SSE_RETRY_INTERVAL", "-5"}}, "GATEWAY_SSE_RETRY_INTERVAL"},
      {{}, {{"GATEWAY_SSE_RETRY_INTERVAL", "1.5"}}, "GATEWAY_SSE_RETRY_INTERVAL"},
      {{}, {{"GATEWAY_SSE_BUFFER_SIZE", "0"}}, "GATEWAY_SSE_BUFFER_SIZE"},
      {{}, {{"GATEWAY_EVENT_RETENTION", "-1"}}, "GATEWAY_EVENT_RETENTION"},
      {{}, {{"GATEWAY_MAX_BODY_BYTES", "lots"}}, "GATEWAY_MAX_BODY_BYTES"},
      {{}, {{"GATEWAY_WEBHOOK_SECRET", "nope"}}, "GATEWAY_WEBHOOK_SECRET"},
      {{}, {{"GATEWAY_WEBHOOK_SECRET", "whsec_!!!"}}, "GATEWAY_WEBHOOK_SECRET"},
      {{}, {{"GATEWAY_WEBHOOK_ALLOW_PRIVATE", "yes please"}}, "GATEWAY_WEBHOOK_ALLOW_PRIVATE"},
      {{}, {{"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "1,x,3"}}, "GATEWAY_WEBHOOK_RETRY_SCHEDULE"},
      {{}, {{"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "1,-2"}}, "GATEWAY_WEBHOOK_RETRY_SCHEDULE"},
      {{}, {{"GATEWAY_DRAIN_TIMEOUT", "soon"}}, "GATEWAY_DRAIN_TIMEOUT"},
      {{}, {{"GATEWAY_HEADER_TIMEOUT", "-0.5"}}, "GATEWAY_HEADER_TIMEOUT"},
      {{}, {{"GATEWAY_STORE_WRITER_NICE", "20"}}, "GATEWAY_STORE_WRITER_NICE"},
      {{}, {{"GATEWAY_STORE_WRITER_NICE", "-5"}}, "GATEWAY_STORE_WRITER_NICE"},
      {{"--bogus"}, {}, "--bogus"},
      {{"--bogus=1"}, {}, "--bogus"},
      {{"--port=abc"}, {}, "--port"},
      {{"--port", "abc"}, {}, "--port"},
      {{"--sse-heartbeat-interval=-1"}, {}, "--sse-heartbeat-interval"},
      {{"--port"}, {}, "--port"},  // a flag without its value
      {{"frobnicate"}, {}, "frobnicate"},
      // A valid variable does not excuse a bad flag: the flag is what counts.
      {{"--port=abc"}, {{"GATEWAY_PORT", "0"}}, "--port"},
  };
  for (const auto& c : cases) {
    std::string label;
    for (const auto& a : c.args) label += a + " ";
    for (const auto& [k, v] : c.env) label += k + "=" + v + " ";
    INFO("run: " << label);
    auto r = run_gateway_command(c.args, c.env, 10s);
    INFO("output: " << r.output);
    CHECK_FALSE(r.timed_out);
    CHECK(r.status > 0);  // a non-zero exit, not a crash by signal
    CHECK(r.output.find(c.named) != std::string::npos);
    CHECK(r.output.find("listening on") == std::string::npos);
  }
}

TEST_CASE("run_gateway_command reports a bad value and a non-zero exit") {
  // The shared helper has no deadline; only values that stop the binary at once are passed.
  auto [status, output, timed_out] = run_gateway_command({}, {{"GATEWAY_PORT", "abc"}});
  CHECK(status != 0);
  CHECK(output.find("GATEWAY_PORT") != std::string::npos);
  auto [status2, output2, timed_out2] = run_gateway_command({"--bogus"}, {});
  CHECK(status2 != 0);
  CHECK(output2.find("--bogus") != std::string::npos);
}

TEST_CASE("--help exits 0 and lists the settings of the contract") {
  auto r = run_gateway_command({"--help"}, {}, 10s);
  CHECK_FALSE(r.timed_out);
  CHECK(r.status == 0);
  for (const char* name :
       {"GATEWAY_HOST", "GATEWAY_PORT", "GATEWAY_DB_PATH", "GATEWAY_SSE_RETRY_INTERVAL", "GATEWAY_SSE_HEARTBEAT_INTERVAL",
        "GATEWAY_SSE_BUFFER_SIZE", "GATEWAY_EVENT_RETENTION", "GATEWAY_MAX_BODY_BYTES", "GATEWAY_WEBHOOK_SECRET",
        "GATEWAY_WEBHOOK_ALLOW_PRIVATE", "GATEWAY_WEBHOOK_RETRY_SCHEDULE", "GATEWAY_DRAIN_TIMEOUT"}) {
    INFO("setting " << name);
    CHECK(r.output.find(name) != std::string::npos);
  }
  auto [status, output, timed_out] = run_gateway_command({"--help"}, {});
  CHECK(status == 0);
  CHECK(output.find("GATEWAY_PORT") != std::string::npos);
}

TEST_CASE("valid settings start the server and take effect") {
  gateway_process gw({{"GATEWAY_MAX_BODY_BYTES", "1024"},
                      {"GATEWAY_SSE_HEARTBEAT_INTERVAL", "0.25"},
                      {"GATEWAY_WEBHOOK_SECRET", ""},
                      {"GATEWAY_DRAIN_TIMEOUT", "1"}});
  CHECK(http_call(gw.port(), "GET", "/healthz").status == 200);
  auto big = http_call(gw.port(), "POST", "/sessions", R"({"title":")" + std::string(2000, 'x') + R"("})");
  check_error(big, 413, "payload_too_large");
  CHECK(http_call(gw.port(), "POST", "/sessions", R"({"title":"small"})").status == 201);
}

TEST_CASE("the store's writer and the WAL checkpointer run GATEWAY_STORE_WRITER_NICE levels below the io threads") {
  for (const auto& [setting, expected] : std::vector<std::pair<std::string, int>>{{"", 10}, {"3", 3}, {"0", 0}}) {
    INFO("GATEWAY_STORE_WRITER_NICE=" << (setting.empty() ? "(default)" : setting));
    gateway_process::env_map env;
    if (!setting.empty()) env["GATEWAY_STORE_WRITER_NICE"] = setting;
    gateway_process gw(env);
    REQUIRE(http_call(gw.port(), "GET", "/healthz").status == 200);
    const auto nices = thread_nices(gw.pid());
    const int base = nices.find("agw-journal")->second;  // the process's own level
    for (const char* background : {"agw-writer", "agw-checkpoint"}) {
      INFO(background);
      REQUIRE(nices.count(background) == 1);
      CHECK(nices.find(background)->second == std::min(base + expected, 19));
    }
    // What a streamed token waits on stays at the process's level.
    for (const auto& [name, nice] : nices)
      if (name.starts_with("agw-io") || name.starts_with("agw-reader")) CHECK(nice == base);
  }
}
