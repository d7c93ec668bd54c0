#pragma once
// SIGHUP re-reads the API keys file (access_control::reload). The signal set
// owns itself through its pending wait and lives until the io_context stops.
// Installed whether or not a keys file is configured, so a stray SIGHUP never
// kills the process.
#include <boost/asio/io_context.hpp>

#include "gateway/auth/access_control.hpp"

namespace agw::gateway::auth {

void reload_keys_on_sighup(boost::asio::io_context& io, access_control& access);

}  // namespace agw::gateway::auth
