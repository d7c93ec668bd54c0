#include "persistence/postgres/pg_backend.hpp"

#include <thread>

#include "persistence/postgres/pg_migrations.hpp"

namespace agw::persistence::pg {

void prepare_database(pg_store& store) { migrate(store.db()); }

bool other_nodes_connected(pg_store& store, std::chrono::milliseconds grace) {
  const auto until = std::chrono::steady_clock::now() + grace;
  for (;;) {
    auto r = store.db().run(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 "
        "AND pid <> pg_backend_pid()",
        params().add(application_name));
    if (r.int64(0, 0) == 0) return false;
    if (std::chrono::steady_clock::now() >= until) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

pg_backend::pg_backend(const std::string& url) {
  core::store_executor::options opts;
  // A commit is a network round trip and a WAL flush on the server: readers run
  // replays and lookups meanwhile, on connections of their own.
  opts.readers = 4;
  auto connect = [url](core::store_executor::connection_role) { return std::make_unique<pg_store>(url); };
  store_ = std::make_unique<core::store_executor>(connect, opts);
  writer_ = std::make_unique<pg_event_writer>(*store_);
}

pg_backend::~pg_backend() {
  // Jobs still queued point into the writer: finish them before it goes.
  store_->stop();
}

}  // namespace agw::persistence::pg
