# SPDX-License-Identifier: MIT
# Consumer tests: CMake projects outside the source tree that use loopcanary the way a user
# does, configured, built and run by CTest through run_consumer.cmake. Included by tests/ (host)
# and tests/device/ (firmware).

set(LOOPCANARY_CONSUMER_DIR ${CMAKE_CURRENT_LIST_DIR})
set(LOOPCANARY_CONSUMER_PREFIX ${PROJECT_BINARY_DIR}/consumer/prefix)

# consumer.install: `cmake --install` of this build into a fresh prefix (after
# consumer.clean_prefix), the fixture the installed-package tests need; then
# consumer.installed_headers: the installed headers are exactly the tree's public ones.
function(loopcanary_consumer_install)
  add_test(NAME consumer.clean_prefix COMMAND ${CMAKE_COMMAND} -E rm -rf ${LOOPCANARY_CONSUMER_PREFIX})
  add_test(NAME consumer.install
    COMMAND ${CMAKE_COMMAND} --install ${PROJECT_BINARY_DIR} --prefix ${LOOPCANARY_CONSUMER_PREFIX})
  set_tests_properties(consumer.clean_prefix PROPERTIES LABELS consumer FIXTURES_SETUP consumer_clean)
  set_tests_properties(consumer.install PROPERTIES LABELS consumer
    FIXTURES_REQUIRED consumer_clean FIXTURES_SETUP consumer_prefix)

  get_property(ports GLOBAL PROPERTY LOOPCANARY_PORTS)
  set(port_include_dirs)
  foreach(port IN LISTS ports)
    if(port STREQUAL "template")
      continue()  # a skeleton to copy, not installed
    endif()
    get_target_property(include_dirs loopcanary_port_${port} LOOPCANARY_INCLUDE_DIRS)
    list(APPEND port_include_dirs ${include_dirs})
  endforeach()
  get_property(adapters GLOBAL PROPERTY LOOPCANARY_ADAPTERS)
  set(adapter_headers)
  foreach(adapter IN LISTS adapters)
    get_target_property(headers loopcanary_adapter_${adapter} LOOPCANARY_PUBLIC_HEADERS)
    list(APPEND adapter_headers ${headers})
  endforeach()
  set(boards)
  if(TARGET loopcanary_board_mps2)
    set(boards mps2)
  endif()
  get_property(folders GLOBAL PROPERTY LOOPCANARY_INSTALLED_FOLDERS)
  foreach(list port_include_dirs adapter_headers boards folders LOOPCANARY_GENERATED_HEADERS)
    list(JOIN ${list} "|" ${list}_joined)
  endforeach()
  add_test(NAME consumer.installed_headers
    COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DPREFIX=${LOOPCANARY_CONSUMER_PREFIX}
      -DINCLUDEDIR=${CMAKE_INSTALL_INCLUDEDIR} "-DGENERATED=${LOOPCANARY_GENERATED_HEADERS_joined}"
      "-DINCLUDE_DIRS=${port_include_dirs_joined}"
      "-DADAPTERS=${adapter_headers_joined}" "-DBOARDS=${boards_joined}" "-DFOLDERS=${folders_joined}"
      -P ${LOOPCANARY_CONSUMER_DIR}/check_installed_headers.cmake)
  set_tests_properties(consumer.installed_headers PROPERTIES LABELS consumer FIXTURES_REQUIRED consumer_prefix)
endfunction()

# consumer.<name>: the project in tests/consumer/<folder> configured with this build's
# compiler, build type and flags plus ARGS, built, and RUN (if given) run, under EMULATOR (if
# given; in a cross build, CMAKE_CROSSCOMPILING_EMULATOR otherwise). INSTALLED: it uses the installed package (needs consumer.install). EXPECT_ERROR: its
# configure step must fail with that message. CTEST: the project's own tests run (ctest).
function(loopcanary_consumer_test name folder)
  cmake_parse_arguments(ARG "INSTALLED;CTEST" "RUN;EXPECT_ERROR" "ARGS;EMULATOR" ${ARGN})
  if(ARG_RUN AND NOT ARG_EMULATOR AND CMAKE_CROSSCOMPILING_EMULATOR)
    set(ARG_EMULATOR ${CMAKE_CROSSCOMPILING_EMULATOR})  # a cross build's program, e.g. under qemu-aarch64
  endif()
  set(args -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE} "-DCMAKE_CXX_FLAGS=${CMAKE_CXX_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${CMAKE_EXE_LINKER_FLAGS}"
    -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=${CMAKE_INTERPROCEDURAL_OPTIMIZATION})
  if(CMAKE_TOOLCHAIN_FILE)
    list(APPEND args -DCMAKE_TOOLCHAIN_FILE=${CMAKE_TOOLCHAIN_FILE})
    foreach(var LOOPCANARY_CORTEX_M_CPU LOOPCANARY_QEMU_ICOUNT_SHIFT)
      list(APPEND args -D${var}=${${var}})
    endforeach()
  else()
    list(APPEND args -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER})
  endif()
  if(ARG_INSTALLED)
    list(APPEND args -DCMAKE_PREFIX_PATH=${LOOPCANARY_CONSUMER_PREFIX})
  endif()
  list(APPEND args ${ARG_ARGS})
  list(JOIN args "|" args)
  set(command ${CMAKE_COMMAND} -DSOURCE=${LOOPCANARY_CONSUMER_DIR}/${folder}
    -DBINARY=${PROJECT_BINARY_DIR}/consumer/${name} -DGENERATOR=${CMAKE_GENERATOR} "-DARGS=${args}")
  if(ARG_RUN)
    list(APPEND command -DRUN=${ARG_RUN})
  endif()
  if(ARG_EMULATOR)
    list(JOIN ARG_EMULATOR "|" emulator)
    list(APPEND command "-DEMULATOR=${emulator}")
  endif()
  if(ARG_CTEST)
    list(APPEND command -DCTEST=ON)
  endif()
  if(DEFINED ARG_EXPECT_ERROR)
    list(APPEND command "-DEXPECT_ERROR=${ARG_EXPECT_ERROR}")
  endif()
  add_test(NAME consumer.${name} COMMAND ${command} -P ${LOOPCANARY_CONSUMER_DIR}/run_consumer.cmake)
  set_tests_properties(consumer.${name} PROPERTIES LABELS consumer TIMEOUT 600)
  if(ARG_INSTALLED)
    set_tests_properties(consumer.${name} PROPERTIES FIXTURES_REQUIRED consumer_prefix)
  endif()
endfunction()
