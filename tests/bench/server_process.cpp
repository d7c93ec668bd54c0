#include "tests/bench/server_process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace agw::bench {
namespace {

std::filesystem::path make_temp_dir() {
  auto pattern = (std::filesystem::temp_directory_path() / "agw-bench-XXXXXX").string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error(std::string("mkdtemp failed: ") + std::strerror(errno));
  return std::filesystem::path(buf.data());
}

std::vector<std::string> child_environment(const server_process::env_map& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    // The caller's own GATEWAY_* settings would make figures irreproducible.
    if (kv.starts_with("GATEWAY_")) continue;
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

int decode_status(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status); }

// One line of /proc/<pid>/stat (or /proc/<pid>/task/<tid>/stat) split after the
// command name, which may hold spaces.
std::optional<std::vector<std::string>> proc_stat_fields(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  auto close_paren = line.rfind(')');
  if (close_paren == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close_paren + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

}  // namespace

server_process::server_process(std::filesystem::path binary, env_map extra_env, std::chrono::seconds start_timeout) {
  if (access(binary.c_str(), X_OK) != 0)
    throw std::runtime_error("server binary '" + binary.string() + "' is not executable (build agent-gateway or pass --binary)");
  dir_ = make_temp_dir();
  log_path_ = dir_ / "gateway.log";
  extra_env["GATEWAY_HOST"] = "127.0.0.1";  // the bench only ever talks to loopback
  extra_env["GATEWAY_PORT"] = "0";
  db_path_ = dir_ / "gateway.db";
  extra_env["GATEWAY_DB_PATH"] = db_path_.string();
  extra_env.emplace("GATEWAY_LOG_LEVEL", "warn");  // request logging would dominate the figures
  // Pinned rather than left to the server's default, so stream figures stay comparable
  // across versions; --server-env overrides it.
  extra_env.emplace("GATEWAY_SSE_HEARTBEAT_INTERVAL", "15");
  auto env = child_environment(extra_env);

  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::string path = binary.string();
  std::string log_file = log_path_.string();
  std::vector<char*> argv{path.data(), nullptr};
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    // If the bench dies without cleaning up (SIGKILL, crash), take the server with it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(fds[1], 1);
    int log = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log >= 0) dup2(log, 2);
    execve(path.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(fds[1]);

  // The server prints "agent-gateway listening on HOST:PORT" once it accepts.
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + start_timeout;
  while (text.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    pollfd p{fds[0], POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) break;
    char buf[256];
    auto n = read(fds[0], buf, sizeof buf);
    if (n <= 0) {
      // EOF: the process is exiting; give it a moment to become reapable.
      for (int i = 0; i < 50 && running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      break;
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
  // Later stdout output goes nowhere: the server only prints that one line.
  close(fds[0]);
  auto marker = text.find("listening on");
  auto colon = text.rfind(':');
  int port = 0;
  if (marker != std::string::npos && colon != std::string::npos && colon > marker) port = std::atoi(text.c_str() + colon + 1);
  if (port <= 0 || port > 65535) {
    std::string log = stderr_text();
    // An early exit (bad configuration, missing library) is told apart from a hang.
    std::string why = running() ? "did not report a port within " + std::to_string(start_timeout.count()) + " s"
                                : "exited with status " + std::to_string(*exit_status_) + " before reporting a port";
    stop(std::chrono::seconds(2));
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw std::runtime_error("server " + why + "; stdout: '" + text + "'; stderr: " + log);
  }
  port_ = static_cast<std::uint16_t>(port);
}

server_process::~server_process() {
  stop();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

bool server_process::running() {
  if (pid_ <= 0 || exit_status_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_status_ = decode_status(status);
    return false;
  }
  return true;
}

std::optional<double> server_process::cpu_seconds() const {
  if (pid_ <= 0 || exit_status_) return std::nullopt;
  auto fields = proc_stat_fields("/proc/" + std::to_string(pid_) + "/stat");
  // After "pid (comm)": state is field 3, utime 14, stime 15 → indices 11 and 12 here.
  if (!fields || fields->size() < 13) return std::nullopt;
  double ticks = std::stod((*fields)[11]) + std::stod((*fields)[12]);
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::optional<double> server_process::cpu_seconds_precise() const {
  if (pid_ <= 0 || exit_status_) return std::nullopt;
  const std::string task = "/proc/" + std::to_string(pid_) + "/task";
  DIR* dir = opendir(task.c_str());
  if (!dir) return std::nullopt;
  double on_cpu_ns = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream sched(task + "/" + e->d_name + "/schedstat");
    double ns = 0;
    if (sched >> ns) on_cpu_ns += ns;
  }
  closedir(dir);
  return on_cpu_ns / 1e9;
}

std::optional<std::uint64_t> server_process::storage_write_bytes() const {
  if (pid_ <= 0 || exit_status_) return std::nullopt;
  std::ifstream io("/proc/" + std::to_string(pid_) + "/io");
  for (std::string line; std::getline(io, line);)
    if (line.starts_with("write_bytes:")) return std::stoull(line.substr(12));
  return std::nullopt;
}

bool server_process::reset_peak_rss() const {
  if (pid_ <= 0 || exit_status_) return false;
  std::ofstream out("/proc/" + std::to_string(pid_) + "/clear_refs");
  if (!out) return false;
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

std::vector<std::pair<std::size_t, server_process::thread_sample>> server_process::thread_use_since(
    const std::vector<thread_sample>& before, double& waited) const {
  std::vector<std::pair<std::size_t, thread_sample>> out;
  const auto after = thread_samples();
  waited = 0;
  for (std::size_t i = 0; i < after.size(); ++i) {
    auto delta = after[i];
    for (const auto& b : before)
      if (b.tid == delta.tid) {
        delta.cpu_seconds -= b.cpu_seconds;
        delta.runqueue_wait_seconds -= b.runqueue_wait_seconds;
        delta.write_bytes -= std::min(delta.write_bytes, b.write_bytes);
      }
    waited += delta.runqueue_wait_seconds;
    out.emplace_back(i, delta);
  }
  return out;
}

void server_process::print_thread_use(const std::vector<std::pair<std::size_t, thread_sample>>& threads) {
  if (threads.empty()) return;
  std::printf("    server threads (name#creation order: cpu s/run-queue wait s, W = wrote to storage):");
  for (const auto& [index, t] : threads)
    if (t.cpu_seconds >= 0.005 || t.write_bytes > 0)
      std::printf(" %s#%zu %.2f/%.2f%s", t.name.c_str(), index, t.cpu_seconds, t.runqueue_wait_seconds,
                  t.write_bytes > 0 ? "W" : "");
  std::printf("\n");
}

std::vector<server_process::thread_sample> server_process::thread_samples() const {
  std::vector<thread_sample> out;
  if (pid_ <= 0 || exit_status_) return out;
  const std::string task = "/proc/" + std::to_string(pid_) + "/task";
  DIR* dir = opendir(task.c_str());
  if (!dir) return out;
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string base = task + "/" + e->d_name;
    auto fields = proc_stat_fields(base + "/stat");
    if (!fields || fields->size() < 13) continue;
    thread_sample t;
    t.tid = static_cast<pid_t>(std::atol(e->d_name));
    std::ifstream comm(base + "/comm");
    std::getline(comm, t.name);
    t.cpu_seconds = (std::stod((*fields)[11]) + std::stod((*fields)[12])) / hz;
    // schedstat: ns on a CPU, ns waiting on a run queue, timeslices. On a shared
    // machine the second tells "slow" from "starved".
    std::ifstream sched(base + "/schedstat");
    double on_cpu_ns = 0, waiting_ns = 0;
    if (sched >> on_cpu_ns >> waiting_ns) t.runqueue_wait_seconds = waiting_ns / 1e9;
    std::ifstream io(base + "/io");
    for (std::string line; std::getline(io, line);)
      if (line.starts_with("write_bytes:")) t.write_bytes = std::stoull(line.substr(12));
    out.push_back(t);
  }
  closedir(dir);
  std::sort(out.begin(), out.end(), [](const thread_sample& a, const thread_sample& b) { return a.tid < b.tid; });
  return out;
}

std::optional<long> server_process::peak_rss_kib() const {
  if (pid_ <= 0 || exit_status_) return std::nullopt;
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("VmHWM:")) return std::atol(line.c_str() + 6);
  }
  return std::nullopt;
}

int server_process::stop(std::chrono::seconds grace) {
  if (pid_ <= 0) return -1;
  if (exit_status_) return *exit_status_;
  if (!running()) return *exit_status_;
  ::kill(pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!running()) return *exit_status_;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  exit_status_ = decode_status(status);
  return *exit_status_;
}

std::string server_process::stderr_text() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace agw::bench
