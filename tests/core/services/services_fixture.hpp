#pragma once
// The core services over the in-memory fake store, on one io_context that the
// test drives by hand: await() runs a service call to its end (and whatever it
// started meanwhile), settle() runs everything left (a run to its done).
// Time is the real clock unless a test hands in another (a manual_clock, which
// it declares before the fixture and leaves with no wait pending). A coroutine
// parked on a manual clock still holds work (co_spawn's), so settle() would not
// return while one waits: such tests drive with run_until() and advance().
#include <doctest/doctest.h>
#include <chrono>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <exception>
#include <optional>
#include <string>

#include "core/api_error.hpp"
#include "core/clock.hpp"
#include "core/services/event_service.hpp"
#include "core/services/message_service.hpp"
#include "core/services/run_service.hpp"
#include "core/services/session_service.hpp"
#include "core/services/webhook_service.hpp"
#include "core/session_hub.hpp"
#include "core/settings.hpp"
#include "core/store_executor.hpp"
#include "core/tools/tool_registry.hpp"
#include "core/tools/tool_runner.hpp"
#include "tests/support/fake_event_writer.hpp"
#include "tests/support/fake_store.hpp"

namespace agw::test {

namespace net = boost::asio;

inline core::settings service_settings() {
  core::settings s;
  return s;
}

struct services_fixture {
  services_fixture() : clock(real_clock) {}
  explicit services_fixture(core::clock& time) : clock(time) {}
  ~services_fixture() {
    settle();
    store.stop();
  }

  // Runs `op` on the io_context until it completes; rethrows what it threw.
  template <class T>
  T await(net::awaitable<T> op) {
    std::exception_ptr error;
    std::optional<T> value;
    bool done = false;
    net::co_spawn(io, std::move(op), [&](std::exception_ptr e, T v) {
      error = e;
      if (!e) value.emplace(std::move(v));
      done = true;
    });
    drive(done);
    if (error) std::rethrow_exception(error);
    return std::move(*value);
  }
  void await(net::awaitable<void> op) {
    std::exception_ptr error;
    bool done = false;
    net::co_spawn(io, std::move(op), [&](std::exception_ptr e) {
      error = e;
      done = true;
    });
    drive(done);
    if (error) std::rethrow_exception(error);
  }
  void settle() {
    io.restart();
    io.run();
  }
  // Runs handlers until `ready()` holds; fails (rather than hangs) when nothing happens for 10 s.
  template <class P>
  void run_until(P ready) {
    io.restart();
    while (!ready()) REQUIRE(io.run_one_for(std::chrono::seconds(10)) > 0);
  }
  // Runs the handlers that are ready now, without waiting for any.
  void poll() {
    io.restart();
    io.poll();
  }

  core::session_view create(const std::string& body = "{}") { return await(sessions.create(boost::json::parse(body))); }

  fake_db db;
  net::io_context io;
  core::real_clock real_clock;
  core::clock& clock;
  core::metrics stats;
  core::settings config = service_settings();
  core::tool_registry tools = core::make_builtin_tools([this] { return clock.wall_now(); });
  core::tool_runner runner{tools, 1, config.tool_timeout};
  core::store_executor store{db.factory(), {.readers = 1}};
  fake_event_writer writer{store};
  core::session_hub hub{io.get_executor(), store, writer, stats, config, runner};
  core::session_service sessions{store, hub, clock};
  std::atomic<int> outbox_wakes{0};
  core::run_service runs{store, hub, sessions, stats, clock, [this] { outbox_wakes++; }};
  core::message_service messages{store, sessions};
  core::event_service events{sessions, hub, clock};
  core::webhook_service deliveries{store, sessions, clock};

 private:
  void drive(const bool& done) {
    io.restart();
    while (!done && io.run_one()) {
    }
    REQUIRE(done);
  }
};

// The api_error code `f` throws, or nullopt when it throws none.
template <class F>
std::optional<core::error_code> error_of(F&& f) {
  try {
    f();
  } catch (const core::api_error& e) {
    return e.code();
  }
  return std::nullopt;
}

}  // namespace agw::test
