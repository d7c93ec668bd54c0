#include "persistence/postgres/pg_backend.hpp"

#include "persistence/postgres/pg_migrations.hpp"

namespace agw::persistence::pg {

void prepare_database(pg_store& store) { migrate(store.db()); }

pg_backend::pg_backend(const std::string& url, const std::string& node_id, int writer_nice) {
  core::store_executor::options opts;
  opts.writer_nice = writer_nice;
  // A commit is a network round trip and a WAL flush on the server: readers run
  // replays and lookups meanwhile, on connections of their own.
  opts.readers = 4;
  auto connect = [url, node_id](core::store_executor::connection_role) { return std::make_unique<pg_store>(url, node_id); };
  store_ = std::make_unique<core::store_executor>(connect, opts);
  writer_ = std::make_unique<pg_event_writer>(*store_);
}

pg_backend::~pg_backend() {
  // Jobs still queued point into the writer: finish them before it goes.
  store_->stop();
}

}  // namespace agw::persistence::pg
