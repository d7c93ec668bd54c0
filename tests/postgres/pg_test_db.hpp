#pragma once
// A fresh PostgreSQL database per test, on the server scripts/pg_temp.sh started
// for this test process (AGW_TEST_PG_URL names it, database `postgres`). The first
// use migrates a template database; each test_db is then a CREATE DATABASE ...
// TEMPLATE of it (a file copy, milliseconds), dropped again at the end.
#include <unistd.h>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "persistence/postgres/pg_migrations.hpp"
#include "persistence/postgres/pg_store.hpp"

namespace agw::test {

// The server's URL with another database name in place of the last path segment.
inline std::string pg_url_for(const std::string& database) {
  const char* base = std::getenv("AGW_TEST_PG_URL");
  if (!base || !*base) throw std::runtime_error("AGW_TEST_PG_URL is not set: run under scripts/pg_temp.sh run");
  std::string url = base;
  return url.substr(0, url.rfind('/') + 1) + database;
}

class pg_test_db {
 public:
  pg_test_db() : name_("agw_t" + std::to_string(::getpid()) + "_" + std::to_string(next_id()++)) {
    admin().exec("CREATE DATABASE " + name_ + " TEMPLATE " + template_name());
  }
  ~pg_test_db() {
    try {
      admin().exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    } catch (...) {
      // The server goes with the test process anyway.
    }
  }
  pg_test_db(const pg_test_db&) = delete;
  pg_test_db& operator=(const pg_test_db&) = delete;

  const std::string& name() const { return name_; }
  std::string url() const { return pg_url_for(name_); }
  std::unique_ptr<persistence::pg::pg_store> open() const { return std::make_unique<persistence::pg::pg_store>(url()); }

 private:
  static std::atomic<int>& next_id() {
    static std::atomic<int> n{0};
    return n;
  }
  // One admin connection for the process (CREATE/DROP DATABASE run outside transactions).
  static persistence::pg::connection& admin() {
    static persistence::pg::connection c(pg_url_for("postgres"));
    return c;
  }
  static const std::string& template_name() {
    static const std::string name = [] {
      const std::string n = "agw_tmpl" + std::to_string(::getpid());
      admin().exec("DROP DATABASE IF EXISTS " + n);
      admin().exec("CREATE DATABASE " + n);
      {
        persistence::pg::connection c(pg_url_for(n));
        persistence::pg::migrate(c);
      }  // a template must have no connections when it is copied
      return n;
    }();
    return name;
  }
  std::string name_;
};

}  // namespace agw::test
