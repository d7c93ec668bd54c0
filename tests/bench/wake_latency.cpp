// How late this machine wakes a sleeping thread, right now: a yardstick for reading
// the paced and resume figures, which are timer wakes and socket wakes of mostly idle
// threads. On a shared virtual machine the host decides when an idle virtual CPU runs
// again; in some hours that adds milliseconds to a wake, for every server alike
// (docs/streaming.md, "How late the machine wakes a thread"). No server is involved.
//
//   wake_latency [--seconds S] [--period-us P]   (defaults: 5 s, 1,000 µs)
//
// One thread sleeps to absolute deadlines P apart (clock_nanosleep, TIMER_ABSTIME on
// CLOCK_MONOTONIC) and records how long after each deadline it ran again. A deadline
// already passed when a sleep starts is skipped, not slept, so one long pause counts
// once rather than as a run of late wakes. Prints one line of key=value figures in
// milliseconds.
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr std::int64_t ns_per_s = 1'000'000'000;

std::int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * ns_per_s + t.tv_nsec;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "wake_latency: %s\nusage: wake_latency [--seconds S] [--period-us P]\n", why);
  std::exit(2);
}

double positive_number(const char* text, const char* name) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v > 0)) usage((std::string(name) + " must be a positive number").c_str());
  return v;
}

// The value at quantile q (0..1) of sorted values.
double at(const std::vector<double>& sorted, double q) {
  const auto i = static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1));
  return sorted[i];
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  double period_us = 1000;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--seconds") == 0 && has_value) {
      seconds = positive_number(argv[++i], "--seconds");
    } else if (std::strcmp(argv[i], "--period-us") == 0 && has_value) {
      period_us = positive_number(argv[++i], "--period-us");
    } else {
      usage((std::string("unknown or incomplete argument ") + argv[i]).c_str());
    }
  }
  const auto period_ns = static_cast<std::int64_t>(period_us * 1000);
  if (period_ns < 10'000) usage("--period-us must be at least 10");
  const std::int64_t end = now_ns() + static_cast<std::int64_t>(seconds * ns_per_s);

  std::vector<double> late_ms;
  late_ms.reserve(static_cast<std::size_t>(seconds * ns_per_s / static_cast<double>(period_ns)) + 1);
  std::int64_t deadline = now_ns() + period_ns;
  while (deadline < end) {
    const timespec when{static_cast<time_t>(deadline / ns_per_s), static_cast<long>(deadline % ns_per_s)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &when, nullptr) != 0) {
      // EINTR: sleep on to the same deadline.
    }
    const std::int64_t woke = now_ns();
    late_ms.push_back(static_cast<double>(woke - deadline) / 1e6);
    deadline += period_ns;
    if (deadline <= woke) deadline += ((woke - deadline) / period_ns + 1) * period_ns;  // skip the passed ones
  }
  if (late_ms.empty()) usage("--seconds is shorter than one period");
  std::sort(late_ms.begin(), late_ms.end());
  std::printf("wake_latency period_us=%.0f wakes=%zu p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f\n", period_us,
              late_ms.size(), at(late_ms, 0.5), at(late_ms, 0.9), at(late_ms, 0.99), at(late_ms, 0.999), late_ms.back());
  return 0;
}
