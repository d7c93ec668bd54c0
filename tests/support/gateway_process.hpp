#pragma once
// Starts the real agent-gateway binary on a free loopback port (port 0) with
// its database in a temporary directory, and stops it by its own PID.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace agw::test {

class temp_dir {
 public:
  temp_dir();
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

class gateway_process {
 public:
  using env_map = std::map<std::string, std::string>;
  // Starts at once; throws when the server does not report its port within 15 s.
  explicit gateway_process(env_map env = {});
  ~gateway_process();
  gateway_process(const gateway_process&) = delete;
  gateway_process& operator=(const gateway_process&) = delete;

  std::uint16_t port() const { return port_; }
  const std::string& db_path() const { return db_path_; }
  pid_t pid() const { return pid_; }

  void kill9();          // SIGKILL and reap
  int terminate();       // SIGTERM; returns the exit status (or -signal)
  void signal(int sig);  // sends sig and returns at once (drain tests act while it drains)
  // Waits for the process to exit: its status (or -signal); at the deadline it is
  // killed (SIGKILL, so -9 comes back) and a test checking for 0 fails instead of hanging.
  int wait_exit(std::chrono::milliseconds deadline);
  void start();               // (re)start with the same database and environment
  std::string stderr_text();  // what the process logged so far

 private:
  temp_dir dir_;
  env_map env_;
  std::string db_path_;
  std::string log_path_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

// The runner's setting for every gateway a test starts: AGW_TEST_GATEWAY_<name>
// (tests/postgres/integration_on_pg.sh) or GATEWAY_<name>; empty when neither is set.
std::string runner_setting(const std::string& name);
// The gateways of this run store on PostgreSQL (ctest integration_pg), not SQLite.
inline bool on_postgres() { return runner_setting("STORE") == "postgres"; }

struct command_result {
  int status = -1;     // exit status, or -signal
  std::string output;  // stdout and stderr
  bool timed_out = false;
};

// Runs the binary with args and env (a temporary database and port 0 unless env
// says otherwise) and waits for it to exit; at the deadline it is killed by its
// PID, so a bad value the server wrongly accepts fails a test instead of hanging it.
command_result run_gateway_command(const std::vector<std::string>& args, const gateway_process::env_map& env,
                                   std::chrono::milliseconds deadline = std::chrono::seconds(20));

}  // namespace agw::test
