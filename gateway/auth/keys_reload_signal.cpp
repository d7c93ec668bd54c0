#include "gateway/auth/keys_reload_signal.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/signal_set.hpp>

#include <csignal>
#include <memory>

namespace agw::gateway::auth {
namespace {

void wait_for_hangup(std::shared_ptr<boost::asio::signal_set> signals, access_control& access) {
  signals->async_wait([signals, &access](const boost::system::error_code& ec, int) {
    if (ec) return;  // the io_context is stopping
    if (auto failure = access.reload())
      spdlog::error("SIGHUP: the API keys were not reloaded, the previous keys stay: {}", *failure);
    else
      spdlog::info("SIGHUP: API keys reloaded");
    wait_for_hangup(signals, access);
  });
}

}  // namespace

void reload_keys_on_sighup(boost::asio::io_context& io, access_control& access) {
  wait_for_hangup(std::make_shared<boost::asio::signal_set>(io, SIGHUP), access);
}

}  // namespace agw::gateway::auth
