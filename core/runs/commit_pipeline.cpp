#include "core/runs/commit_pipeline.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/storage/store_error.hpp"

namespace agw::core {

namespace net = boost::asio;

commit_pipeline::commit_pipeline(io_strand strand, std::string session_id, event_log_writer& log, options opts, owner& to,
                                 std::int64_t committed_id)
    : strand_(std::move(strand)),
      session_id_(std::move(session_id)),
      log_(log.open(session_id_, opts.thread_id)),
      opts_(opts),
      owner_(to),
      committed_id_(committed_id) {}

void commit_pipeline::push(frame_ptr event) {
  if (closed_ || fenced_) return;
  pending_.push_back(std::move(event));
  pushed_at_.push_back(std::chrono::steady_clock::now());
  flush();
}

void commit_pipeline::flush() {
  if (in_flight_ || closed_ || fenced_ || pending_.empty()) return;
  // A whole batch waiting goes at once: the spacing must not cap a session's rate.
  const bool whole = pending_.size() >= opts_.max_batch;
  if (spaced_ && !whole) return;  // the spacing's timer sends it
  if (const auto spacing = owner_.release_spacing(); spacing.count() > 0) {
    const auto now = std::chrono::steady_clock::now();
    if (!whole && now < last_sent_ + spacing) return flush_at(last_sent_ + spacing);
    last_sent_ = now;
  }
  in_flight_ = true;
  // A bounded batch: one log write and one delivery per subscriber stay small, and
  // the rest commits right behind it.
  const std::size_t take = std::min(pending_.size(), opts_.max_batch);
  auto batch = std::make_shared<std::vector<frame_ptr>>(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(take));
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(take));
  const time_point oldest = pushed_at_.front();
  pushed_at_.erase(pushed_at_.begin(), pushed_at_.begin() + static_cast<std::ptrdiff_t>(take));
  in_flight_count_ = batch->size();
  if (unstored_) {
    // The session's rows are gone: the run's last events go to its followers only.
    // Not stored: not a commit's wait, so not observed.
    net::post(strand_, [this, alive = owner_.keep_alive(), batch] { on_committed(batch, std::nullopt, nullptr); });
    return;
  }
  event_log_writer::batch request;
  request.events = *batch;
  request.ends_run = std::any_of(batch->begin(), batch->end(), [](const frame_ptr& f) { return f->type == event_type::done; });
  request.retention = opts_.retention;
  request.fence = fence_;
  request.executor = strand_;
  request.done = [this, alive = owner_.keep_alive(), batch, oldest](std::exception_ptr error) {
    on_committed(batch, oldest, error);
  };
  log_->append(std::move(request));
}

void commit_pipeline::flush_at(time_point due) {
  // The timer is the handler's own (as retry_later's): a channel keeps no timer once
  // nothing waits, so none outlives its io_context through a channel held elsewhere.
  auto timer = std::make_shared<net::steady_timer>(strand_, due);
  spaced_ = true;
  timer->async_wait([this, alive = owner_.keep_alive(), timer](const boost::system::error_code&) {
    spaced_ = false;
    flush();
  });
}

void commit_pipeline::on_committed(const std::shared_ptr<std::vector<frame_ptr>>& batch, std::optional<time_point> oldest,
                                   std::exception_ptr error) {
  in_flight_ = false;
  in_flight_count_ = 0;
  if (closed_) return;
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const fenced_out& e) {
      // Another node owns the session's run now: never retried, nothing more written.
      spdlog::warn("session {}: event batch of {} events fenced out: {}; the run stops", session_id_, batch->size(), e.what());
      const bool already = fenced_;
      fence_out();
      if (!already) owner_.on_fenced_out();
      return;
    } catch (...) {
    }
    return retry_later(batch, oldest.value_or(std::chrono::steady_clock::now()), error);
  }
  if (opts_.commit_wait && oldest)
    opts_.commit_wait->observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - *oldest).count());
  committed_id_ = batch->back()->id;
  owner_.released(*batch);
  if (closed_) return;  // the owner closed (a deleted session's run ended)
  wake(commit_waiters_);
  flush();
  if (pending_.size() < opts_.high_watermark) wake(watermark_waiters_);
}

void commit_pipeline::retry_later(const std::shared_ptr<std::vector<frame_ptr>>& batch, time_point oldest,
                                  std::exception_ptr error) {
  // Storage refused the batch: keep its frames (ids stay assigned, nothing was
  // released) and retry after a pause; the run waits at the watermark meanwhile.
  if (fenced_) return;  // the run's lease is gone: these would be refused too
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    spdlog::error("session {}: event batch of {} events not committed: {}; retrying", session_id_, batch->size(), e.what());
  }
  pending_.insert(pending_.begin(), batch->begin(), batch->end());
  pushed_at_.insert(pushed_at_.begin(), batch->size(), oldest);  // the batch's wait goes on from its oldest
  auto timer = std::make_shared<net::steady_timer>(strand_, std::chrono::milliseconds(200));
  in_flight_ = true;  // hold further flushes until the retry
  timer->async_wait([this, alive = owner_.keep_alive(), timer](const boost::system::error_code&) {
    in_flight_ = false;
    flush();
  });
}

void commit_pipeline::adopt(std::int64_t last_id) {
  if (!idle() || last_id <= committed_id_) return;
  committed_id_ = last_id;
}

void commit_pipeline::drop_pending() {
  pending_.clear();
  pushed_at_.clear();
}

void commit_pipeline::fence_out() {
  fenced_ = true;
  drop_pending();
  wake(commit_waiters_);
  wake(watermark_waiters_);
}

void commit_pipeline::close() {
  closed_ = true;
  drop_pending();
  wake(commit_waiters_);
  wake(watermark_waiters_);
}

void commit_pipeline::wake(std::vector<std::shared_ptr<net::steady_timer>>& waiters) {
  auto woken = std::move(waiters);
  waiters.clear();
  for (auto& t : woken) t->cancel();
}

net::awaitable<void> commit_pipeline::wait_committed(std::int64_t id) {
  while (committed_id_ < id && !closed_ && !fenced_) {
    auto timer = std::make_shared<net::steady_timer>(strand_, net::steady_timer::time_point::max());
    commit_waiters_.push_back(timer);
    co_await timer->async_wait(net::as_tuple(net::use_awaitable));
  }
}

net::awaitable<void> commit_pipeline::wait_below_watermark() {
  while (above_watermark()) {
    auto timer = std::make_shared<net::steady_timer>(strand_, net::steady_timer::time_point::max());
    watermark_waiters_.push_back(timer);
    co_await timer->async_wait(net::as_tuple(net::use_awaitable));
  }
}

}  // namespace agw::core
