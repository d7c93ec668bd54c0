#pragma once
// A background duty repeated at a fixed pause: the loop shared by the services that
// sweep on their own (session_sweeper, run_takeover). Each pass starts `interval`
// after the previous one ended, so a slow pass never overlaps the next. A pass that
// throws is logged and the next interval tries again: a busy or failing store only
// delays the duty.
//
// Executor: the calling coroutine's. The caller keeps `stopped` and everything
// `pass` uses alive until the loop returns (it checks `stopped` before and after
// every pause).
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <string>

namespace agw::core {

class clock;

boost::asio::awaitable<void> repeat_every(const clock& time, std::chrono::milliseconds interval, const std::atomic<bool>& stopped,
                                          std::function<boost::asio::awaitable<void>()> pass, std::string what);

}  // namespace agw::core
