# SPDX-License-Identifier: MIT
# Every public header compiles on its own (twice in a row: include guards), with the core's
# flags: the core's, the generated ones included, each port's (LOOPCANARY_PUBLIC_HEADERS of its
# target, against that port's include path), each adapter's and the board's. Included by tests/ and
# tests/device/, so it runs for the host and for the device.
function(loopcanary_header_check target)
  cmake_parse_arguments(ARG "" "PREFIX" "HEADERS;LIBS" ${ARGN})
  set(sources)
  foreach(header IN LISTS ARG_HEADERS)
    string(MAKE_C_IDENTIFIER "${ARG_PREFIX}${header}" name)
    set(source ${CMAKE_CURRENT_BINARY_DIR}/${target}/${name}.cpp)
    file(CONFIGURE OUTPUT ${source} CONTENT "#include \"${ARG_PREFIX}${header}\"\n#include \"${ARG_PREFIX}${header}\"\n")
    list(APPEND sources ${source})
  endforeach()
  add_library(${target} OBJECT ${sources})
  target_link_libraries(${target} PRIVATE ${ARG_LIBS})
  target_compile_options(${target} PRIVATE ${LOOPCANARY_CORE_FLAGS})
  loopcanary_warnings(${target})
endfunction()
loopcanary_header_check(loopcanary_header_check PREFIX loopcanary/
  HEADERS ${LOOPCANARY_CORE_HEADERS} ${LOOPCANARY_GENERATED_HEADERS} LIBS loopcanary::core)
get_property(ports GLOBAL PROPERTY LOOPCANARY_PORTS)
foreach(port IN LISTS ports)
  get_target_property(headers loopcanary_port_${port} LOOPCANARY_PUBLIC_HEADERS)
  loopcanary_header_check(loopcanary_port_${port}_header_check HEADERS ${headers} LIBS loopcanary::port_${port})
endforeach()
get_property(adapters GLOBAL PROPERTY LOOPCANARY_ADAPTERS)
foreach(adapter IN LISTS adapters)
  get_target_property(headers loopcanary_adapter_${adapter} LOOPCANARY_PUBLIC_HEADERS)
  loopcanary_header_check(loopcanary_adapter_${adapter}_header_check HEADERS ${headers} LIBS loopcanary::adapter_${adapter})
endforeach()
if(TARGET loopcanary_board_mps2)
  loopcanary_header_check(loopcanary_board_mps2_header_check HEADERS loopcanary/board.hpp LIBS loopcanary::board_mps2)
endif()
