#pragma once
// One run in one encoding, encoded once per event for every stream that follows it
// (docs/frontends.md, "Encoded once"). A front-end encoder keeps state (which message
// is open), but every stream of a run in an encoding starts at the run's first event,
// so all of them would make the same bytes: one head encoder takes each frame the
// first time any stream asks for it, and its bytes wait in a bounded window for the
// streams that come after.
//
// Ownership: each stream's shared_frame_encoder holds the run's encoded_run; the last
// stream to end frees it. encoded_runs() only finds a live one for a new stream
// (weakly: it owns none). Thread-safety: streams of one run write on different
// connection strands, so an encoded_run locks its own mutex; shared_frame_encoder is
// one stream's, used on its executor only.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gateway/encodings/frame_encoder.hpp"

namespace agw::gateway {

using encoder_factory = std::function<std::unique_ptr<frame_encoder>()>;

class encoded_run {
 public:
  // The window keeps at most window_bytes (and window_frames) of encoded frames, and
  // lets go of the frames every stream of the run has passed once it is over keep_bytes
  // (below that, the frames wait for streams that join the run from its start later).
  static constexpr std::size_t default_window_bytes = 1 << 20;
  static constexpr std::size_t default_window_frames = 16384;
  static constexpr std::size_t default_keep_bytes = 256 << 10;

  explicit encoded_run(encoder_factory make, std::size_t window_bytes = default_window_bytes,
                       std::size_t window_frames = default_window_frames, std::size_t keep_bytes = default_keep_bytes);

  // A stream of the run: its slot, for append(), until it detaches.
  std::size_t attach();
  void detach(std::size_t slot);

  // Appends `frame`'s bytes (numbered frames, in id order per slot): from the window,
  // or encoded now when it is newer than every frame encoded so far. False when it
  // is older than the window (nothing appended).
  bool append(const core::event_frame& frame, std::size_t slot, std::string& out);

  // A fresh encoder of this encoding, for a stream that starts behind the window.
  std::unique_ptr<frame_encoder> make_encoder() const { return make_(); }

  std::size_t held_bytes();  // the window's bytes now (for tests)

 private:
  struct entry {
    std::int64_t id;
    std::string bytes;
  };
  void trim();  // after the head took a frame

  std::mutex mutex_;
  const encoder_factory make_;
  const std::size_t window_bytes_, window_frames_, keep_bytes_;
  std::unique_ptr<frame_encoder> head_;  // has taken every frame up to head_id_
  std::int64_t head_id_ = -1;
  std::deque<entry> window_;  // ascending ids, the newest last
  std::size_t bytes_ = 0;
  std::vector<std::int64_t> passed_;  // per slot: the last id that stream got; free slots: the max
};

// One stream's view of an encoded_run. A stream whose first frame has already left the
// window (it joined a long run late, e.g. the AI SDK's resume) encodes on its own with
// a fresh encoder, from the run's first event as every front-end stream starts. A
// stream that shared and then fell behind the window can no longer be encoded: lost().
class shared_frame_encoder final : public frame_encoder {
 public:
  explicit shared_frame_encoder(std::shared_ptr<encoded_run> run) : run_(std::move(run)), slot_(run_->attach()) {}
  ~shared_frame_encoder() override;
  shared_frame_encoder(const shared_frame_encoder&) = delete;
  shared_frame_encoder& operator=(const shared_frame_encoder&) = delete;
  void encode(const core::event_frame& frame, std::string& out) override;
  bool lost() const override { return lost_; }
  bool sharing() const { return !own_; }

 private:
  std::shared_ptr<encoded_run> run_;  // null once the stream encodes on its own
  std::size_t slot_;
  std::unique_ptr<frame_encoder> own_;  // set when the stream started behind the window
  bool shared_ = false;                 // took a frame from the run's window
  bool lost_ = false;
};

// The live encoded_run named `key` (the encoding and everything its bytes depend on:
// run id, ids the encoder names), made with `make` when none is: a stream's encoder.
std::shared_ptr<frame_encoder> shared_encoder(const std::string& key, const encoder_factory& make);

}  // namespace agw::gateway
