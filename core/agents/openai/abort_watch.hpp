#pragma once
// Closes an upstream exchange the moment its run is aborted, for as long as the
// watch lives (while an answer is read): one sleep on the run's abortable timer
// for the whole answer, instead of racing every read against it (which cost a
// timer and two coroutines per token). Destroying the watch ends that sleep.
// Runs on the session's strand; the watching coroutine holds the run, the
// exchange and its own stop signal, so it may finish after the watch is gone.
#include <memory>

#include "core/http/streaming_http_client.hpp"
#include "core/runs/run_context.hpp"

namespace agw::core::openai {

class abort_watch {
 public:
  abort_watch(run_context& ctx, std::shared_ptr<streaming_http_exchange> exchange);
  ~abort_watch();
  abort_watch(const abort_watch&) = delete;
  abort_watch& operator=(const abort_watch&) = delete;

  struct state;  // shared with the watching coroutine (abort_watch.cpp)

 private:
  std::shared_ptr<state> state_;
};

}  // namespace agw::core::openai
