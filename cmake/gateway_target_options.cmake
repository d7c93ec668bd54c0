# Warnings and sanitizers, applied per target so third-party code is untouched.
function(gateway_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  # GCC 12 reports false -Wrestrict positives inside std::string (GCC bug 105329).
  target_compile_options(${target} PRIVATE -Wno-restrict)
  if(GATEWAY_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(GATEWAY_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
