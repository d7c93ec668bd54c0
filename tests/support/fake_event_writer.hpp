#pragma once
// core::event_log_writer for unit tests: each batch is one urgent write job on
// the store executor that appends it to the event log as one row and trims the
// log to the batch's retention. No journal, no tails: the plainest layout a store
// may choose, so channel tests see exactly when the store committed.
// Thread-safety: open() and append() from any thread (the executor queues the job).
#include <boost/asio/bind_executor.hpp>

#include "core/events/log_codec.hpp"
#include "core/storage/event_log_writer.hpp"
#include "core/store_executor.hpp"

namespace agw::test {

class fake_event_writer final : public core::event_log_writer {
 public:
  explicit fake_event_writer(core::store_executor& store) : store_(store) {}

  std::shared_ptr<session_log> open(const std::string& session_id, const std::string&) override {
    return std::make_shared<log>(store_, session_id);
  }
  void forget(std::string_view session_id) override { forgotten.emplace_back(session_id); }
  bool retire(std::string_view) override { return true; }  // nothing held per session

  std::vector<std::string> forgotten;  // forget()'s ids, in order (the test's thread only)

 private:
  struct log final : session_log {
    log(core::store_executor& store, std::string session_id) : store_(store), session_id_(std::move(session_id)) {}
    void append(batch b) override;
    core::store_executor& store_;
    const std::string session_id_;
  };
  core::store_executor& store_;
};

inline void fake_event_writer::log::append(batch b) {
  core::event_batch_record row{session_id_, b.events.front()->id, b.events.back()->id, core::encode_log_frames(b.events), 0};
  auto job = [row = std::move(row), keep = static_cast<std::int64_t>(b.retention), fence = b.fence](core::store_connection& c) {
    // Fenced like PostgreSQL's writer: only while the token holds the session's lease.
    if (fence != 0) {
      auto held = c.find_run_lease(row.session_id);
      if (!held || held->token != fence) throw core::fenced_out("the session's run lease was taken");
    }
    c.append_events(row);
    if (keep > 0 && row.last_id > keep) c.trim_events(row.session_id, row.last_id - keep + 1);
  };
  store_.async_write_urgent(std::move(job), boost::asio::bind_executor(b.executor, std::move(b.done)));
}

}  // namespace agw::test
