#pragma once
// The PostgreSQL schema and its migrations. It means what SQLite's does
// (persistence/migrations.cpp is the reference), laid out for PostgreSQL: no
// journal (a commit costs one WAL flush however many rows it carries), foreign
// keys with ON DELETE CASCADE, identity columns where SQLite orders by rowid.
#include "persistence/postgres/pg_connection.hpp"

namespace agw::persistence::pg {

int schema_version();
// Brings the database to schema_version(). Safe when several nodes start at once:
// the migrations run under a transaction-scoped advisory lock.
void migrate(connection& c);

}  // namespace agw::persistence::pg
