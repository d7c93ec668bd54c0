#include "gateway/process_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace agw::gateway {
namespace {

struct process_sample {
  double cpu_seconds = 0;
  double start_time_seconds = 0;  // since the epoch
  double virtual_bytes = 0;
  double resident_bytes = 0;
  double open_fds = 0;
  double max_fds = 0;
};

// Seconds since the epoch at boot, from /proc/stat's btime.
double boot_time() {
  std::ifstream stat("/proc/stat");
  std::string key;
  double value = 0;
  while (stat >> key) {
    if (key == "btime" && stat >> value) return value;
    stat.ignore(4096, '\n');
  }
  return 0;
}

process_sample sample() {
  process_sample s;
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name, which is in parentheses and may hold spaces.
  const auto close = text.rfind(')');
  if (close != std::string::npos) {
    std::istringstream fields(text.substr(close + 2));
    std::vector<std::string> f{std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>()};
    // f[0] is field 3 (state): utime 14, stime 15, starttime 22, vsize 23, rss 24.
    if (f.size() > 21) {
      const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
      s.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / ticks;
      s.start_time_seconds = boot_time() + std::stod(f[19]) / ticks;
      s.virtual_bytes = std::stod(f[20]);
      s.resident_bytes = std::stod(f[21]) * static_cast<double>(sysconf(_SC_PAGESIZE));
    }
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    s.open_fds += 1;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) s.max_fds = static_cast<double>(limit.rlim_cur);
  return s;
}

}  // namespace

void add_process_families(std::vector<prometheus::MetricFamily>& out) {
  const auto s = sample();
  prometheus::Registry registry;
  prometheus::BuildCounter()
      .Name("process_cpu_seconds_total")
      .Help("User and system CPU time spent, in seconds.")
      .Register(registry)
      .Add({})
      .Increment(s.cpu_seconds);
  auto gauge = [&registry](const char* name, const char* help, double value) {
    prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add({}).Set(value);
  };
  gauge("process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds.", s.start_time_seconds);
  gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", s.virtual_bytes);
  gauge("process_resident_memory_bytes", "Resident memory size in bytes.", s.resident_bytes);
  gauge("process_open_fds", "Open file descriptors.", s.open_fds);
  gauge("process_max_fds", "Maximum number of open file descriptors.", s.max_fds);
  auto collected = registry.Collect();
  out.insert(out.end(), std::make_move_iterator(collected.begin()), std::make_move_iterator(collected.end()));
}

}  // namespace agw::gateway
