# Turns a file into a C++ source defining `const std::string_view agw::gateway::web::<SYMBOL>`
# over a byte array holding the file's exact bytes (no delimiter or escaping rules to break).
# Run at build time: cmake -DINPUT=<file> -DOUTPUT=<file.cpp> -DSYMBOL=<name> -P embed_file.cmake
foreach(var INPUT OUTPUT SYMBOL)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed_file.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT SYMBOL MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
  message(FATAL_ERROR "embed_file.cmake: SYMBOL '${SYMBOL}' is not a C++ identifier")
endif()

file(READ "${INPUT}" hex HEX)
file(SIZE "${INPUT}" size)
# 16 bytes a line, then every byte as 0xNN.
string(REGEX REPLACE "([0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f])"
       "\\1\n    " hex "${hex}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")

get_filename_component(name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
"// Generated from ${name} by cmake/embed_file.cmake at build time: do not edit.
#include <string_view>

namespace agw::gateway::web {
namespace {
const unsigned char ${SYMBOL}_bytes[] = {
    ${bytes}0x00};
}  // namespace

extern const std::string_view ${SYMBOL};
const std::string_view ${SYMBOL}{reinterpret_cast<const char*>(${SYMBOL}_bytes), ${size}};

}  // namespace agw::gateway::web
")
# Rewrite only on change, so an untouched page does not recompile anything.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
