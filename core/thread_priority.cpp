#include "core/thread_priority.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace agw::core {

int this_thread_nice() {
  errno = 0;
  // PRIO_PROCESS with a thread id: that thread alone (Linux, setpriority(2) NOTES).
  const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  return errno == 0 ? nice : 0;
}

bool lower_this_thread_priority(int increment) {
  if (increment <= 0) return true;
  const int target = std::min(this_thread_nice() + increment, 19);
  return ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), target) == 0;
}

}  // namespace agw::core
