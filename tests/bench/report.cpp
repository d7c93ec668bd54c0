#include "tests/bench/report.hpp"

#include <algorithm>
#include <utility>

namespace agw::bench {
namespace {

// Server CPU per successful request: the efficiency figure that stays meaningful
// when the client, not the server, limits throughput.
std::optional<double> server_us_per_request(const measurement& m) {
  if (!m.server_cpu_s) return std::nullopt;
  const auto ok = m.requests - m.errors;
  if (ok == 0) return std::nullopt;
  return *m.server_cpu_s * 1e6 / static_cast<double>(ok);
}

void print_header(std::FILE* out) {
  std::fprintf(out, "%-8s %5s %-6s %10s %9s %9s %7s %9s %11s %10s %11s\n", "op", "conns", "run", "req/s", "p50_us", "p99_us",
               "errors", "requests", "srv_cpu_s", "srv_us/req", "client_cpu_s");
}

void print_row(std::FILE* out, const std::string& op, unsigned conns, const std::string& run, double rps, double p50, double p99,
               double errors, double requests, std::optional<double> server_cpu, std::optional<double> server_per_req,
               double client_cpu) {
  char cpu[32] = "-";
  char per_req[32] = "-";
  if (server_cpu) std::snprintf(cpu, sizeof cpu, "%.2f", *server_cpu);
  if (server_per_req) std::snprintf(per_req, sizeof per_req, "%.1f", *server_per_req);
  std::fprintf(out, "%-8s %5u %-6s %10.1f %9.1f %9.1f %7.0f %9.0f %11s %10s %11.2f\n", op.c_str(), conns, run.c_str(), rps, p50,
               p99, errors, requests, cpu, per_req, client_cpu);
}

}  // namespace

std::string format_optional(std::optional<double> v, const char* fmt) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, *v);
  return buf;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

void report::add(measurement m) {
  std::fprintf(out_, "  %-6s C=%-4u run %u: %.1f req/s, p50 %.1f us, p99 %.1f us, %llu/%llu errors", m.operation.c_str(),
               m.connections, m.run, m.requests_per_s, m.p50_us, m.p99_us, static_cast<unsigned long long>(m.errors),
               static_cast<unsigned long long>(m.requests));
  if (m.server_cpu_s) std::fprintf(out_, ", server cpu %.2f s", *m.server_cpu_s);
  std::fprintf(out_, "\n");
  if (!m.first_error.empty()) std::fprintf(out_, "    first error: %s\n", m.first_error.c_str());
  std::fflush(out_);
  rows_.push_back(std::move(m));
}

void report::add_quietly(measurement m) { rows_.push_back(std::move(m)); }

void report::print_summary(std::string_view title) const {
  std::fprintf(out_, "\n== %.*s ==\n", static_cast<int>(title.size()), title.data());
  if (table_) {
    table_(out_);
    std::fflush(out_);
    return;
  }
  print_header(out_);
  // Groups in order of first appearance, so the table follows the order the scenario ran.
  std::vector<std::pair<std::string, unsigned>> groups;
  for (const auto& m : rows_) {
    std::pair<std::string, unsigned> key{m.operation, m.connections};
    if (std::find(groups.begin(), groups.end(), key) == groups.end()) groups.push_back(key);
  }
  for (const auto& [op, conns] : groups) {
    std::vector<double> rps, p50, p99, errors, requests, cpu, per_req, client;
    bool have_cpu = true;
    for (const auto& m : rows_) {
      if (m.operation != op || m.connections != conns) continue;
      print_row(out_, op, conns, std::to_string(m.run), m.requests_per_s, m.p50_us, m.p99_us, static_cast<double>(m.errors),
                static_cast<double>(m.requests), m.server_cpu_s, server_us_per_request(m), m.client_cpu_s);
      rps.push_back(m.requests_per_s);
      p50.push_back(m.p50_us);
      p99.push_back(m.p99_us);
      errors.push_back(static_cast<double>(m.errors));
      requests.push_back(static_cast<double>(m.requests));
      client.push_back(m.client_cpu_s);
      auto per = server_us_per_request(m);
      if (m.server_cpu_s && per) {
        cpu.push_back(*m.server_cpu_s);
        per_req.push_back(*per);
      } else {
        have_cpu = false;
      }
    }
    print_row(out_, op, conns, "median", median(rps), median(p50), median(p99), median(errors), median(requests),
              have_cpu ? std::optional<double>(median(cpu)) : std::nullopt,
              have_cpu ? std::optional<double>(median(per_req)) : std::nullopt, median(client));
  }
  std::fflush(out_);
}

std::uint64_t report::total_requests() const {
  std::uint64_t n = 0;
  for (const auto& m : rows_) n += m.requests;
  return n;
}

std::uint64_t report::total_errors() const {
  std::uint64_t n = 0;
  for (const auto& m : rows_) n += m.errors;
  return n;
}

}  // namespace agw::bench
