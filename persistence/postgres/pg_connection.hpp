#pragma once
// RAII over libpq: one connection, its prepared statements, results, and every
// failure as core::store_error. Plain libpq rather than libpqxx (docs/scale-out.md,
// "Why plain libpq"): the store needs a handful of calls, and Debian's libpq-dev is
// the one dependency PostgreSQL itself ships.
//
// Not thread-safe: the store_executor gives each connection to exactly one thread.
#include <libpq-fe.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace agw::persistence::pg {

// The application_name every connection of the gateway gives.
inline constexpr const char* application_name = "agent-gateway";

// The parameters of one statement, in $1.. order. Text values are sent as text,
// bytes (bytea) in binary form, so no escaping happens on either side.
class params {
 public:
  params& add(std::string_view text);
  params& add(const std::string& text) { return add(std::string_view(text)); }
  params& add(const char* text) { return add(std::string_view(text)); }
  params& add(std::int64_t value);
  params& add(const std::optional<std::string>& text);
  params& add(const std::optional<std::int64_t>& value);
  params& add_null();
  params& add_bytes(std::string_view bytes);
  int size() const { return static_cast<int>(values_.size()); }

 private:
  friend class connection;
  std::vector<std::string> values_;
  std::vector<bool> null_;
  std::vector<int> formats_;
};

// One statement's rows (text format; bytea columns read with bytes()).
class result {
 public:
  explicit result(PGresult* r) : r_(r) {}
  result(result&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  result& operator=(result&&) = delete;
  result(const result&) = delete;
  ~result() { PQclear(r_); }

  int rows() const { return PQntuples(r_); }
  std::int64_t affected() const;  // rows an INSERT/UPDATE/DELETE touched
  bool is_null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
  std::string text(int row, int col) const;
  std::optional<std::string> optional_text(int row, int col) const;
  std::int64_t int64(int row, int col) const;
  std::optional<std::int64_t> optional_int64(int row, int col) const;
  std::string bytes(int row, int col) const;  // a bytea column, unescaped

 private:
  PGresult* r_;
};

class connection {
 public:
  // Connects (libpq URL or key=value string); throws store_error when it cannot.
  explicit connection(const std::string& url);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  // Runs one statement, prepared once per connection and named by its text: the
  // statements are the store's fixed SQL, so the cache stays small.
  result run(const std::string& sql, const params& p = {});
  // Runs SQL built at run time (filters), unprepared.
  result run_once(const std::string& sql, const params& p = {});
  // Runs a script of several statements (migrations, transaction control): no parameters.
  void exec(const std::string& sql);
  PGTransactionStatusType transaction_status() const { return PQtransactionStatus(conn_); }

 private:
  result check(PGresult* r, std::string_view sql);
  PGconn* conn_ = nullptr;
  std::unordered_map<std::string, std::string> prepared_;  // SQL -> statement name
};

}  // namespace agw::persistence::pg
