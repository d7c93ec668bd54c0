#include "persistence/postgres/pg_connection.hpp"

#include <charconv>
#include <cstring>

#include "core/storage/store_error.hpp"

namespace agw::persistence::pg {

params& params::add(std::string_view text) {
  values_.emplace_back(text);
  null_.push_back(false);
  formats_.push_back(0);
  return *this;
}

params& params::add(std::int64_t value) { return add(std::string_view(std::to_string(value))); }

params& params::add(const std::optional<std::string>& text) { return text ? add(std::string_view(*text)) : add_null(); }

params& params::add(const std::optional<std::int64_t>& value) { return value ? add(*value) : add_null(); }

params& params::add_null() {
  values_.emplace_back();
  null_.push_back(true);
  formats_.push_back(0);
  return *this;
}

params& params::add_bytes(std::string_view bytes) {
  values_.emplace_back(bytes);
  null_.push_back(false);
  formats_.push_back(1);
  return *this;
}

std::int64_t result::affected() const {
  const char* n = PQcmdTuples(r_);
  std::int64_t out = 0;
  std::from_chars(n, n + std::strlen(n), out);
  return out;
}

std::string result::text(int row, int col) const {
  return std::string(PQgetvalue(r_, row, col), static_cast<std::size_t>(PQgetlength(r_, row, col)));
}

std::optional<std::string> result::optional_text(int row, int col) const {
  if (is_null(row, col)) return std::nullopt;
  return text(row, col);
}

std::int64_t result::int64(int row, int col) const {
  const char* v = PQgetvalue(r_, row, col);
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(v, v + PQgetlength(r_, row, col), out);
  if (ec != std::errc()) throw core::store_error(std::string("not an integer: ") + v);
  return out;
}

std::optional<std::int64_t> result::optional_int64(int row, int col) const {
  if (is_null(row, col)) return std::nullopt;
  return int64(row, col);
}

std::string result::bytes(int row, int col) const {
  std::size_t length = 0;
  unsigned char* raw = PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(r_, row, col)), &length);
  if (!raw) throw core::store_error("bytea column could not be decoded");
  std::string out(reinterpret_cast<const char*>(raw), length);
  PQfreemem(raw);
  return out;
}

namespace {

// Every connection says it is the gateway's (pg_stat_activity.application_name):
// a starting node sees whether other nodes are connected (pg_backend.hpp).
PGconn* connect_as_gateway(const std::string& url) {
  const char* keys[] = {"dbname", "application_name", nullptr};
  const char* values[] = {url.c_str(), application_name, nullptr};
  return PQconnectdbParams(keys, values, 1);  // 1: dbname may be a whole URL, expanded
}

}  // namespace

connection::connection(const std::string& url) : conn_(connect_as_gateway(url)) {
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string error = PQerrorMessage(conn_);
    PQfinish(conn_);
    conn_ = nullptr;
    throw core::store_error("postgres: cannot connect: " + error);
  }
  // Notices (e.g. "relation already exists, skipping") are not errors: keep them off stderr.
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
}

connection::~connection() {
  if (conn_) PQfinish(conn_);
}

result connection::check(PGresult* r, std::string_view sql) {
  const auto status = PQresultStatus(r);
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result(r);
  std::string error = r ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
  PQclear(r);
  // A lost connection is reported as such; libpq reconnects only when asked to.
  if (PQstatus(conn_) == CONNECTION_BAD) {
    PQreset(conn_);
    prepared_.clear();  // a new server session knows none of them
  }
  while (!error.empty() && error.back() == '\n') error.pop_back();
  throw core::store_error("postgres: " + error + " (" + std::string(sql.substr(0, 80)) + ")");
}

result connection::run(const std::string& sql, const params& p) {
  auto it = prepared_.find(sql);
  if (it == prepared_.end()) {
    std::string name = "s" + std::to_string(prepared_.size());
    check(PQprepare(conn_, name.c_str(), sql.c_str(), 0, nullptr), sql);
    it = prepared_.emplace(sql, std::move(name)).first;
  }
  std::vector<const char*> values;
  std::vector<int> lengths;
  for (std::size_t i = 0; i < p.values_.size(); ++i) {
    values.push_back(p.null_[i] ? nullptr : p.values_[i].data());
    lengths.push_back(static_cast<int>(p.values_[i].size()));
  }
  return check(PQexecPrepared(conn_, it->second.c_str(), p.size(), values.data(), lengths.data(), p.formats_.data(), 0), sql);
}

result connection::run_once(const std::string& sql, const params& p) {
  std::vector<const char*> values;
  std::vector<int> lengths;
  for (std::size_t i = 0; i < p.values_.size(); ++i) {
    values.push_back(p.null_[i] ? nullptr : p.values_[i].data());
    lengths.push_back(static_cast<int>(p.values_[i].size()));
  }
  return check(PQexecParams(conn_, sql.c_str(), p.size(), nullptr, values.data(), lengths.data(), p.formats_.data(), 0), sql);
}

void connection::exec(const std::string& sql) { check(PQexec(conn_, sql.c_str()), sql); }

}  // namespace agw::persistence::pg
