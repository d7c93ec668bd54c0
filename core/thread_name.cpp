#include "core/thread_name.hpp"

#include <pthread.h>

namespace agw::core {

void name_this_thread(const std::string& name) { pthread_setname_np(pthread_self(), name.substr(0, 15).c_str()); }

}  // namespace agw::core
