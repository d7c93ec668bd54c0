#include "core/runs/multitask.hpp"

namespace agw::core {

std::string_view name_of(multitask m) {
  switch (m) {
    case multitask::enqueue:
      return "enqueue";
    case multitask::interrupt:
      return "interrupt";
    case multitask::reject:
      break;
  }
  return "reject";
}

std::optional<multitask> multitask_named(std::string_view name) {
  if (name == "reject") return multitask::reject;
  if (name == "enqueue") return multitask::enqueue;
  if (name == "interrupt") return multitask::interrupt;
  return std::nullopt;
}

multitask configured_multitask(const boost::json::object& config) {
  const auto* v = config.if_contains("multitask");
  if (!v || !v->is_string()) return multitask::reject;
  return multitask_named(v->get_string()).value_or(multitask::reject);
}

}  // namespace agw::core
