# SPDX-License-Identifier: MIT
# Compares the headers `cmake --install` put under PREFIX/INCLUDEDIR with the headers the tree
# has (cmake -P). Variables:
#   SOURCE_DIR     the loopcanary source tree
#   PREFIX         the install prefix
#   INCLUDEDIR     include folder under PREFIX (CMAKE_INSTALL_INCLUDEDIR)
#   GENERATED      generated core headers (file names), '|'-separated
#   INCLUDE_DIRS   the include folders of the installed ports, '|'-separated folders of
#                  SOURCE_DIR: every header under each is expected at the same path under
#                  INCLUDEDIR
#   ADAPTERS       headers of the adapters built, '|'-separated paths under
#                  port/linux/adapters/include/: expected at the same paths under INCLUDEDIR
#   BOARDS         installed boards, '|'-separated: every header under
#                  port/cortex-m/boards/<name>/include/ under loopcanary/board/<name>/
#   FOLDERS        host parts installed as in the tree, '|'-separated folders of SOURCE_DIR:
#                  every <folder>/**/*.hpp under loopcanary/<folder>/ (sim/runtime: simrt)
# Fails naming every header that is in the tree but not installed, or installed but not in the
# tree.
cmake_minimum_required(VERSION 3.25)

foreach(list GENERATED INCLUDE_DIRS ADAPTERS BOARDS FOLDERS)
  string(REPLACE "|" ";" ${list} "${${list}}")
endforeach()

set(expected)
file(GLOB core_headers RELATIVE ${SOURCE_DIR}/core/include ${SOURCE_DIR}/core/include/loopcanary/*.hpp)
list(APPEND expected ${core_headers})
foreach(header IN LISTS GENERATED)
  list(APPEND expected loopcanary/${header})
endforeach()
foreach(include_dir IN LISTS INCLUDE_DIRS)
  file(GLOB_RECURSE port_headers RELATIVE ${SOURCE_DIR}/${include_dir} ${SOURCE_DIR}/${include_dir}/*.hpp)
  list(APPEND expected ${port_headers})
endforeach()
foreach(header IN LISTS ADAPTERS)
  if(NOT EXISTS ${SOURCE_DIR}/port/linux/adapters/include/${header})
    message(FATAL_ERROR "adapter header port/linux/adapters/include/${header} is not in the tree")
  endif()
  list(APPEND expected ${header})
endforeach()
foreach(board IN LISTS BOARDS)
  set(board_include_dir ${SOURCE_DIR}/port/cortex-m/boards/${board}/include)
  file(GLOB_RECURSE board_headers RELATIVE ${board_include_dir} ${board_include_dir}/*.hpp)
  list(TRANSFORM board_headers PREPEND loopcanary/board/${board}/)
  list(APPEND expected ${board_headers})
endforeach()

foreach(folder IN LISTS FOLDERS)
  file(GLOB_RECURSE folder_headers RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/${folder}/*.hpp)
  list(TRANSFORM folder_headers PREPEND loopcanary/)
  list(APPEND expected ${folder_headers})
endforeach()

file(GLOB_RECURSE installed RELATIVE ${PREFIX}/${INCLUDEDIR} ${PREFIX}/${INCLUDEDIR}/*)

set(missing ${expected})
set(extra ${installed})
if(installed)
  list(REMOVE_ITEM missing ${installed})
endif()
if(expected)
  list(REMOVE_ITEM extra ${expected})
endif()
if(missing OR extra)
  list(JOIN missing "\n  " missing)
  list(JOIN extra "\n  " extra)
  message(FATAL_ERROR "installed headers differ from the tree's public headers\n"
    "in the tree, not installed (add them to the header list in core/CMakeLists.txt or "
    "loopcanary_add_port's HEADERS, or move a private one beside its sources):\n  ${missing}\n"
    "installed, not in the tree:\n  ${extra}")
endif()
list(LENGTH installed count)
message(STATUS "${count} installed headers match the tree")
