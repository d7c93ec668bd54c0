// How late this machine wakes a sleeping thread, and what a wake costs in CPU, right
// now: context for reading the paced and resume figures, which are made of timer wakes
// and socket wakes of mostly idle threads. On a shared virtual machine the host decides
// when an idle virtual CPU runs again, and in some hours that adds milliseconds to a
// wake. It does not explain every noisy hour (docs/streaming.md, "How late the machine
// wakes a thread"). What a wake costs decides what a thread hop costs a server
// (docs/streaming.md, "What a wake-up costs on this machine"). No server is involved.
//
//   wake_latency [--seconds 1-600] [--period-us 100-1000000]   (defaults: 5, 1000)
//
// One thread sleeps to absolute deadlines P apart (clock_nanosleep, TIMER_ABSTIME on
// CLOCK_MONOTONIC) and records how long after each deadline it ran again. A deadline
// already passed when a sleep starts is skipped, not slept, so one long pause counts
// once rather than as a run of late wakes. Its own CPU time over the loop, divided by
// its wakes, is what one timer wake of an otherwise idle thread costs. Then (after the
// --seconds, well under a second here) two threads pinned to two different CPUs hand a
// token back and forth through eventfds 20,000 times, each blocking in read(2) until
// the other writes: their CPU time per hand-off is what waking a thread on another CPU
// costs, both sides together (handoff_cpus=1 when only one CPU is allowed: then they
// share it). Prints one line of key=value figures: delays in milliseconds, CPU in
// microseconds.
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

namespace {

constexpr std::int64_t ns_per_s = 1'000'000'000;

std::int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * ns_per_s + t.tv_nsec;
}

constexpr const char* usage_line = "usage: wake_latency [--seconds 1-600] [--period-us 100-1000000]\n";

std::optional<std::int64_t> flag_number(std::string_view text, std::int64_t low, std::int64_t high) {
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end != text.data() + text.size() || n < low || n > high) return std::nullopt;
  return n;
}

std::int64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * ns_per_s + t.tv_nsec;
}

// Moves one token over an eventfd. A failure (none expected; EINTR is retried) ends
// the program at once: the other thread would otherwise wait for the token for ever.
void send_token(int fd) {
  const std::uint64_t token = 1;
  ssize_t n = 0;
  while ((n = write(fd, &token, sizeof token)) < 0 && errno == EINTR) {
  }
  if (n != sizeof token) {
    std::fprintf(stderr, "wake_latency: eventfd write: %s\n", std::strerror(errno));
    std::_Exit(1);
  }
}

void take_token(int fd) {
  std::uint64_t token = 0;
  ssize_t n = 0;
  while ((n = read(fd, &token, sizeof token)) < 0 && errno == EINTR) {
  }
  if (n != sizeof token) {
    std::fprintf(stderr, "wake_latency: eventfd read: %s\n", std::strerror(errno));
    std::_Exit(1);
  }
}

// Pins the calling thread to `cpu`, or leaves it where it is for a negative one.
void pin_this_thread(int cpu) {
  if (cpu < 0) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

struct handoff_figure {
  double cpu_us = 0;  // both threads' CPU time per hand-off
  int cpus = 0;       // 2: on two different CPUs; 1: sharing the only one allowed
};

// Two threads that each block in read(2) until the other writes its eventfd, on two
// different CPUs of those this process may use when there are two; nullopt if an
// eventfd cannot be made.
std::optional<handoff_figure> handoff(int rounds) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  sched_getaffinity(0, sizeof allowed, &allowed);
  int cpus[2] = {-1, -1};
  for (int c = 0, found = 0; c < CPU_SETSIZE && found < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus[found++] = c;
  if (cpus[1] < 0) cpus[0] = -1;  // one CPU: nothing to pin to

  const int to_peer = eventfd(0, EFD_CLOEXEC);
  if (to_peer < 0) return std::nullopt;
  const int to_main = eventfd(0, EFD_CLOEXEC);
  if (to_main < 0) {
    const int error = errno;  // for the caller's message, past close()
    close(to_peer);
    errno = error;
    return std::nullopt;
  }
  std::int64_t peer_cpu = 0;
  std::thread peer([&] {
    pin_this_thread(cpus[1]);
    const std::int64_t start = thread_cpu_ns();
    for (int i = 0; i < rounds; ++i) {
      take_token(to_peer);
      send_token(to_main);
    }
    peer_cpu = thread_cpu_ns() - start;
  });
  pin_this_thread(cpus[0]);
  const std::int64_t start = thread_cpu_ns();
  for (int i = 0; i < rounds; ++i) {
    send_token(to_peer);
    take_token(to_main);
  }
  const std::int64_t main_cpu = thread_cpu_ns() - start;
  peer.join();
  pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
  close(to_peer);
  close(to_main);
  return handoff_figure{static_cast<double>(main_cpu + peer_cpu) / 1e3 / (2.0 * rounds), cpus[1] < 0 ? 1 : 2};
}

// The value at quantile q (0..1) of sorted values.
double at(const std::vector<double>& sorted, double q) {
  const auto i = static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1));
  return sorted[i];
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t seconds = 5;
  std::int64_t period_us = 1000;
  for (int i = 1; i < argc; i += 2) {
    const std::string_view flag = argv[i];
    std::optional<std::int64_t> value;
    if (i + 1 < argc && flag == "--seconds") value = flag_number(argv[i + 1], 1, 600);
    if (i + 1 < argc && flag == "--period-us") value = flag_number(argv[i + 1], 100, 1'000'000);
    if (!value) {
      std::fprintf(stderr, "wake_latency: bad or unknown argument %s\n%s", argv[i], usage_line);
      return 2;
    }
    (flag == "--seconds" ? seconds : period_us) = *value;
  }
  const std::int64_t period_ns = period_us * 1000;
  const std::int64_t end = now_ns() + seconds * ns_per_s;

  std::vector<double> late_ms;
  late_ms.reserve(static_cast<std::size_t>(seconds * ns_per_s / period_ns) + 1);  // at most 6e6 wakes: 48 MB
  const std::int64_t cpu_start = thread_cpu_ns();
  std::int64_t deadline = now_ns() + period_ns;
  while (deadline < end) {
    const timespec when{static_cast<time_t>(deadline / ns_per_s), static_cast<long>(deadline % ns_per_s)};
    int rc = 0;
    while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &when, nullptr)) == EINTR) {
      // A signal: sleep on to the same deadline.
    }
    if (rc != 0) {
      std::fprintf(stderr, "wake_latency: clock_nanosleep: %s\n", std::strerror(rc));
      return 1;
    }
    const std::int64_t woke = now_ns();
    late_ms.push_back(static_cast<double>(woke - deadline) / 1e6);
    deadline += period_ns;
    if (deadline <= woke) deadline += ((woke - deadline) / period_ns + 1) * period_ns;  // skip the passed ones
  }
  const std::int64_t sleeper_cpu = thread_cpu_ns() - cpu_start;
  if (late_ms.empty()) {
    std::fprintf(stderr, "wake_latency: --seconds is shorter than one period\n");
    return 2;
  }
  const auto handoffs = handoff(20'000);
  if (!handoffs) {
    std::fprintf(stderr, "wake_latency: eventfd: %s\n", std::strerror(errno));
    return 1;
  }
  std::sort(late_ms.begin(), late_ms.end());
  std::printf(
      "wake_latency period_us=%lld wakes=%zu p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f "
      "cpu_us_per_wake=%.1f handoff_cpu_us=%.1f handoff_cpus=%d\n",
      static_cast<long long>(period_us), late_ms.size(), at(late_ms, 0.5), at(late_ms, 0.9), at(late_ms, 0.99),
      at(late_ms, 0.999), late_ms.back(), static_cast<double>(sleeper_cpu) / 1e3 / static_cast<double>(late_ms.size()),
      handoffs->cpu_us, handoffs->cpus);
  return 0;
}
