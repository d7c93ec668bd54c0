#pragma once
// The agent-gateway under test as a child process: started on a free loopback
// port with a throw-away database, observed through /proc (CPU time, peak RSS),
// and stopped by its own PID. The benchmark never signals anything else.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace agw::bench {

class server_process {
 public:
  using env_map = std::map<std::string, std::string>;

  // Starts the binary and waits (up to start_timeout) for its "listening on" line;
  // throws std::runtime_error with the server's stderr when it does not come.
  server_process(std::filesystem::path binary, env_map extra_env, std::chrono::seconds start_timeout = std::chrono::seconds(15));
  ~server_process();
  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;

  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  bool running();  // false once the process has exited (reaps it)

  // utime + stime of the server so far, in seconds; nullopt once it is gone.
  std::optional<double> cpu_seconds() const;
  // The same to the nanosecond: the sum of its threads' time on a CPU
  // (/proc/PID/task/*/schedstat; a thread that has exited no longer counts, and the
  // server's threads live as long as it does). For windows too short for the 10 ms
  // ticks of cpu_seconds().
  std::optional<double> cpu_seconds_precise() const;
  // Bytes the server caused to be written to storage so far (/proc/PID/io write_bytes:
  // every thread, counted as pages are dirtied); nullopt once it is gone or unreadable.
  std::optional<std::uint64_t> storage_write_bytes() const;
  // The database the bench gave it (GATEWAY_DB_PATH); its WAL is this path + "-wal".
  const std::filesystem::path& database_path() const { return db_path_; }
  // VmHWM (peak resident set) in KiB; nullopt once it is gone.
  std::optional<long> peak_rss_kib() const;
  // Sets VmHWM back to the current RSS (writes 5 to /proc/PID/clear_refs), so the
  // next peak_rss_kib() is the peak of what ran in between; false when refused.
  bool reset_peak_rss() const;

  // CPU per server thread (tid order is creation order).
  struct thread_sample {
    pid_t tid = 0;
    std::string name;                    // /proc/.../comm: agw-writer, agw-io-1, ... (the main thread: agent-gateway)
    double cpu_seconds = 0.0;            // utime + stime
    double runqueue_wait_seconds = 0.0;  // /proc/.../schedstat: runnable, but no CPU free
    std::uint64_t write_bytes = 0;       // /proc/.../io: storage writes (the SQLite writer's)
  };
  std::vector<thread_sample> thread_samples() const;  // sorted by tid; empty once gone
  // Each thread's use since `before` (a thread started meanwhile counts from zero), with
  // its index in creation order; `waited` gets the summed run-queue wait.
  std::vector<std::pair<std::size_t, thread_sample>> thread_use_since(const std::vector<thread_sample>& before,
                                                                      double& waited) const;
  // "    server threads (...): name cpu/wait[W] ..." for the threads that did something.
  static void print_thread_use(const std::vector<std::pair<std::size_t, thread_sample>>& threads);

  // SIGTERM, then SIGKILL when it has not exited within grace. Returns the exit
  // status (or -signal); idempotent.
  int stop(std::chrono::seconds grace = std::chrono::seconds(10));

  std::string stderr_text() const;  // what the server logged (warn and above)

 private:
  std::filesystem::path dir_;  // temporary: database and log, removed at the end
  std::filesystem::path log_path_;
  std::filesystem::path db_path_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
  std::optional<int> exit_status_;
};

}  // namespace agw::bench
