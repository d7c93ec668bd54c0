#include "tests/support/gateway_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

#ifndef GATEWAY_BINARY
#error "GATEWAY_BINARY must name the agent-gateway executable"
#endif

namespace agw::test {
namespace {

std::vector<std::string> environment_with(const gateway_process::env_map& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    // A developer's own GATEWAY_* settings must not leak into hermetic tests. A runner
    // that means one for every gateway a test starts names it AGW_TEST_GATEWAY_*
    // (tests/postgres/integration_on_pg.sh: GATEWAY_STORE, GATEWAY_PG_URL).
    if (kv.starts_with("GATEWAY_")) continue;
    if (kv.starts_with("AGW_TEST_GATEWAY_")) {
      env[kv.substr(9, eq - 9)] = kv.substr(eq + 1);
      continue;
    }
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

// fork + exec with stdout to a pipe (returned) and stderr to log_path.
pid_t spawn(const std::vector<std::string>& args, const std::vector<std::string>& env, int& stdout_fd,
            const std::string& log_path) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(fds[1], 1);
    int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log >= 0) dup2(log, 2);
    std::vector<char*> argv{const_cast<char*>(GATEWAY_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    execve(GATEWAY_BINARY, argv.data(), envp.data());
    _exit(127);
  }
  close(fds[1]);
  stdout_fd = fds[0];
  return pid;
}

int wait_status(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

}  // namespace

temp_dir::temp_dir() {
  std::random_device rd;
  path_ = std::filesystem::temp_directory_path() / ("agw-test-" + std::to_string(getpid()) + "-" + std::to_string(rd()));
  std::filesystem::create_directories(path_);
}

temp_dir::~temp_dir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

gateway_process::gateway_process(env_map env) : env_(std::move(env)) {
  db_path_ = (dir_.path() / "gateway.db").string();
  log_path_ = (dir_.path() / "gateway.log").string();
  start();
}

gateway_process::~gateway_process() {
  if (pid_ > 0) kill9();
}

void gateway_process::start() {
  env_map env = env_;
  env.emplace("GATEWAY_HOST", "127.0.0.1");
  env["GATEWAY_PORT"] = "0";
  env.emplace("GATEWAY_DB_PATH", db_path_);
  env.emplace("GATEWAY_LOG_LEVEL", "warn");
  int out = -1;
  pid_ = spawn({}, environment_with(env), out, log_path_);
  // Read stdout until the "listening on host:port" line.
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (text.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    pollfd p{out, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) break;
    char buf[256];
    auto n = read(out, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  close(out);
  auto colon = text.rfind(':');
  if (text.find("listening on") == std::string::npos || colon == std::string::npos) {
    kill9();
    throw std::runtime_error("gateway did not start: " + text + stderr_text());
  }
  port_ = static_cast<std::uint16_t>(std::stoi(text.substr(colon + 1)));
}

void gateway_process::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  wait_status(pid_);
  pid_ = -1;
}

int gateway_process::terminate() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int status = wait_status(pid_);
  pid_ = -1;
  return status;
}

void gateway_process::signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

int gateway_process::wait_exit(std::chrono::milliseconds deadline) {
  if (pid_ <= 0) return -1;
  const auto end = std::chrono::steady_clock::now() + deadline;
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= end) {
      kill9();
      return -SIGKILL;
    }
    usleep(10'000);
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

std::string gateway_process::stderr_text() {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

command_result run_gateway_command(const std::vector<std::string>& args, const gateway_process::env_map& env,
                                   std::chrono::milliseconds deadline) {
  temp_dir dir;
  gateway_process::env_map full{
      {"GATEWAY_PORT", "0"}, {"GATEWAY_HOST", "127.0.0.1"}, {"GATEWAY_DB_PATH", (dir.path() / "gateway.db").string()}};
  for (const auto& [k, v] : env) full[k] = v;
  auto log = (dir.path() / "out.log").string();
  int out = -1;
  pid_t pid = spawn(args, environment_with(full), out, log);
  command_result result;
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd p{out, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[4096];
    auto n = read(out, buf, sizeof buf);
    if (n <= 0) break;
    result.output.append(buf, static_cast<std::size_t>(n));
  }
  close(out);
  if (result.timed_out) ::kill(pid, SIGKILL);
  result.status = wait_status(pid);
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  result.output += ss.str();
  return result;
}

std::string runner_setting(const std::string& name) {
  if (const char* v = std::getenv(("AGW_TEST_GATEWAY_" + name).c_str())) return v;
  if (const char* v = std::getenv(("GATEWAY_" + name).c_str())) return v;
  return "";
}

}  // namespace agw::test
