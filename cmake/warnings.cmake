# SPDX-License-Identifier: MIT
# Warning set for every loopcanary target (gcc and clang), errors unless LOOPCANARY_WERROR=OFF.

set(LOOPCANARY_WARNINGS
  -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow -Wold-style-cast -Wcast-qual
  -Wnon-virtual-dtor -Woverloaded-virtual -Wdouble-promotion -Wformat=2 -Wundef -Wnull-dereference)

# Adds the warning set to `target`.
function(loopcanary_warnings target)
  target_compile_options(${target} PRIVATE ${LOOPCANARY_WARNINGS} $<$<BOOL:${LOOPCANARY_WERROR}>:-Werror>)
endfunction()

# The core's language contract: no exceptions, no RTTI.
set(LOOPCANARY_CORE_FLAGS -fno-exceptions -fno-rtti)
