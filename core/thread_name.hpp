#pragma once
// Names the calling thread (shown by top -H, perf, gdb): at most 15 characters.
#include <string>

namespace agw::core {

void name_this_thread(const std::string& name);

}  // namespace agw::core
