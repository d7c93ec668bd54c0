#pragma once
// Collects one row per measurement and prints them: a progress line as each run
// ends (a full run takes a minute; silence would look like a hang), then a table
// grouped by (operation, connections) with every run and the median of the runs.
// Medians, not means: on a shared, noisy machine one disturbed run must not move
// the headline figure.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agw::bench {

// `v` printed with the printf format `fmt`, or "-" when there is no figure.
std::string format_optional(std::optional<double> v, const char* fmt);

struct measurement {
  std::string operation;  // "create", "get", later "stream", "fanout", ...
  unsigned connections = 0;
  unsigned run = 0;  // 1-based
  double requests_per_s = 0.0;
  double p50_us = 0.0;
  double p99_us = 0.0;
  std::uint64_t requests = 0;  // attempted: successes + errors
  std::uint64_t errors = 0;    // non-2xx or I/O error
  double elapsed_s = 0.0;
  std::optional<double> server_cpu_s;  // only when the bench started the server
  double client_cpu_s = 0.0;
  std::string first_error;
};

class report {
 public:
  explicit report(std::FILE* out) : out_(out) {}

  void add(measurement m);
  // Keeps the row for the totals (and the exit status) without the request-style
  // progress line: for scenarios whose figures are not requests/s (streams).
  void add_quietly(measurement m);
  // Replaces the generic (operation, connections) table in print_summary with the
  // scenario's own; set it early so a run cut short still prints what it measured.
  void set_table(std::function<void(std::FILE*)> print_table) { table_ = std::move(print_table); }
  void print_summary(std::string_view title) const;

  std::uint64_t total_requests() const;
  std::uint64_t total_errors() const;

 private:
  std::FILE* out_;
  std::vector<measurement> rows_;
  std::function<void(std::FILE*)> table_;
};

double median(std::vector<double> values);

}  // namespace agw::bench
