#pragma once
// Versioned schema migrations, applied in order at start-up inside one
// transaction each; PRAGMA user_version records the applied version.
#include "persistence/sqlite_database.hpp"

namespace agw::persistence {

// Brings the schema to the newest version. Refuses a database newer than this binary.
void migrate(sqlite_database& db);
int schema_version();

}  // namespace agw::persistence
