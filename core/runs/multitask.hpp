#pragma once
// What a message does when it arrives while a run is live (docs/timeline.md,
// "Double texting"): `multitask` in the POST body, else the session's
// config.multitask, else reject (the contract's 409).
#include <boost/json/object.hpp>
#include <optional>
#include <string_view>

namespace agw::core {

enum class multitask {
  reject,     // 409 run_in_progress, nothing stored
  enqueue,    // stored in the session's queue; the next run answers every queued message as one turn
  interrupt,  // the live run is aborted (persisted as aborted) and a new run answers, seeing the partial answer
};

std::string_view name_of(multitask m);
std::optional<multitask> multitask_named(std::string_view name);
// The config's policy (validated when the config was stored); reject when it names none.
multitask configured_multitask(const boost::json::object& config);

}  // namespace agw::core
