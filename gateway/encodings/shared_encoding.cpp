#include "gateway/encodings/shared_encoding.hpp"

#include <algorithm>
#include <limits>

namespace agw::gateway {

encoded_run::encoded_run(encoder_factory make, std::size_t window_bytes, std::size_t window_frames, std::size_t keep_bytes)
    : make_(std::move(make)),
      window_bytes_(window_bytes),
      window_frames_(window_frames),
      keep_bytes_(keep_bytes),
      head_(make_()) {}

constexpr std::int64_t free_slot = std::numeric_limits<std::int64_t>::max();

std::size_t encoded_run::attach() {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < passed_.size(); ++i)
    if (passed_[i] == free_slot) {
      passed_[i] = -1;
      return i;
    }
  passed_.push_back(-1);
  return passed_.size() - 1;
}

void encoded_run::detach(std::size_t slot) {
  std::lock_guard lock(mutex_);
  passed_[slot] = free_slot;
}

void encoded_run::trim() {
  auto over_bound = [this] { return bytes_ > window_bytes_ || window_.size() > window_frames_; };
  // Frames every stream has passed go once the window is over keep_bytes: the scan of the
  // streams is once per frame of the run, not per stream.
  std::int64_t all_passed = -1;
  if (bytes_ > keep_bytes_) all_passed = *std::min_element(passed_.begin(), passed_.end());
  // The newest frame always stays: the streams behind it are the ones that need the window.
  while (window_.size() > 1 && (over_bound() || (bytes_ > keep_bytes_ && window_.front().id <= all_passed))) {
    bytes_ -= window_.front().bytes.size();
    window_.pop_front();
  }
}

bool encoded_run::append(const core::event_frame& frame, std::size_t slot, std::string& out) {
  std::lock_guard lock(mutex_);
  if (frame.id > head_id_) {
    entry e{frame.id, {}};
    head_->encode(frame, e.bytes);
    head_id_ = frame.id;
    out += e.bytes;
    bytes_ += e.bytes.size();
    window_.push_back(std::move(e));
    trim();
    passed_[slot] = frame.id;
    return true;
  }
  if (window_.empty() || frame.id < window_.front().id) return false;
  auto it = std::lower_bound(window_.begin(), window_.end(), frame.id, [](const entry& e, std::int64_t id) { return e.id < id; });
  if (it != window_.end() && it->id == frame.id) out += it->bytes;  // (an id no stream of the run sent: nothing)
  passed_[slot] = frame.id;
  return true;
}

std::size_t encoded_run::held_bytes() {
  std::lock_guard lock(mutex_);
  return bytes_;
}

shared_frame_encoder::~shared_frame_encoder() {
  if (run_) run_->detach(slot_);
}

void shared_frame_encoder::encode(const core::event_frame& frame, std::string& out) {
  if (own_) return own_->encode(frame, out);
  // Unnumbered frames (reconnected) have no form in the front-end encodings.
  if (lost_ || frame.id < 0) return;
  if (run_->append(frame, slot_, out)) {
    shared_ = true;
    return;
  }
  if (shared_) {
    lost_ = true;  // its next frame left the window: the bytes it needs are gone
    return;
  }
  own_ = run_->make_encoder();
  run_->detach(slot_);
  run_.reset();
  own_->encode(frame, out);
}

namespace {

// Live encoded runs by key. Entries of ended runs are swept when a new key comes.
struct registry {
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<encoded_run>, std::less<>> runs;
};

registry& encoded_runs() {
  static registry r;  // process-wide: streams of one run may be on any io thread
  return r;
}

}  // namespace

std::shared_ptr<frame_encoder> shared_encoder(const std::string& key, const encoder_factory& make) {
  auto& reg = encoded_runs();
  std::lock_guard lock(reg.mutex);
  auto& slot = reg.runs[key];
  auto run = slot.lock();
  if (!run) {
    std::erase_if(reg.runs, [](const auto& kv) { return kv.second.expired(); });
    run = std::make_shared<encoded_run>(make);
    reg.runs[key] = run;  // (`slot` may have been swept)
  }
  return std::make_shared<shared_frame_encoder>(std::move(run));
}

}  // namespace agw::gateway
