#pragma once
// Which rows of the event journal are still the only durable copy of some events.
//
// Each session channel holds one claim: the journal seq of its oldest batch that
// has not reached a segment yet, or none. The store's writer may cut the journal
// below the oldest claim (docs/streaming.md, "The event log").
//
// Ordering that makes the cut safe: a claim is set by the journal append job
// itself, on the writer thread, before that job's commit; it is cleared by the
// channel only after the segment holding those frames has committed; and the
// cut runs on the writer thread too. So a cut never passes a row that is still
// needed, whatever the threads do in between (a late clear only keeps rows longer).
//
// Thread-safety: every method may be called from any thread.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace agw::core {

class journal_claims {
 public:
  class claim {
   public:
    // Writer thread, in the append job: the first unsegmented row since the last segment.
    void hold_from(std::int64_t seq) {
      std::int64_t none = 0;
      oldest_.compare_exchange_strong(none, seq);
    }
    // Once the segment that covers every held row has committed.
    void release() { oldest_.store(0); }
    std::optional<std::int64_t> oldest() const {
      auto v = oldest_.load();
      return v ? std::optional<std::int64_t>(v) : std::nullopt;
    }

   private:
    std::atomic<std::int64_t> oldest_{0};  // 0: no row held (journal seqs start at 1)
  };

  // A new claim, counted until its last owner drops it.
  std::shared_ptr<claim> make_claim();
  // The seq below which no claim needs the journal; none: no claim holds any row.
  std::optional<std::int64_t> oldest() const;

 private:
  mutable std::mutex mutex_;
  mutable std::vector<std::weak_ptr<claim>> claims_;  // expired entries are pruned by oldest()
};

}  // namespace agw::core
