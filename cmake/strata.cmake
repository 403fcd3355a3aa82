# Helpers shared by every module's CMakeLists.txt.

# strata_find_package(NAME "DEBIAN_PACKAGES" [find_package arguments...]): find_package that stops
# configure, naming what to apt-get install, when NAME is missing.
macro(strata_find_package name debian)
  find_package(${name} ${ARGN} QUIET)
  if(NOT ${name}_FOUND)
    message(FATAL_ERROR "strata needs ${name}, which was not found: apt-get install ${debian}")
  endif()
endmacro()

# strata_pkg_check(PREFIX MODULE "DEBIAN_PACKAGES"): pkg_check_modules(PREFIX IMPORTED_TARGET MODULE)
# (target PkgConfig::PREFIX) that stops configure, naming what to apt-get install, when MODULE is missing.
macro(strata_pkg_check prefix module debian)
  pkg_check_modules(${prefix} QUIET IMPORTED_TARGET ${module})
  if(NOT ${prefix}_FOUND)
    message(FATAL_ERROR "strata needs ${module} (pkg-config), which was not found: apt-get install ${debian}")
  endif()
endmacro()

# strata_test(NAME SOURCES a_test.cc ... LIBS strata_x ... LABELS unit|integration|fuse|stress [TIMEOUT s])
# One GoogleTest binary, registered with ctest under its labels.
function(strata_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main GTest::gmock)
  # In a sanitizer tree the test drivers compile at -O0, in a third of the time of -O1 (gtest's
  # templates): the code under test, in the module libraries, keeps the build type's -O1. Not
  # libFuzzer's coverage either: only fuzz targets use it.
  if(CMAKE_BUILD_TYPE MATCHES "^(Sanitize|Tsan)$")
    target_compile_options(${name} PRIVATE -O0)
  endif()
  if(STRATA_FUZZ)
    target_compile_options(${name} PRIVATE -fno-sanitize=fuzzer-no-link)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "STRATA_SOURCE_DIR=${CMAKE_SOURCE_DIR};STRATA_BINARY_DIR=${CMAKE_BINARY_DIR}")
  strata_label_needs("${T_LABELS}" ${name})
endfunction()

# strata_label_needs("LABELS" TARGET...): the tests of these labels run these targets. Each
# label gets a target `label_<label>` that builds them (strata_label_targets), so a build that
# runs some labels only (the sanitizer builds of scripts/test.sh) compiles only what they need.
function(strata_label_needs labels)
  foreach(label ${labels})
    set_property(GLOBAL APPEND PROPERTY STRATA_LABEL_${label} ${ARGN})
  endforeach()
endfunction()

# Called once, after every module: defines label_unit, label_integration, label_fuse, label_stress.
function(strata_label_targets)
  foreach(label unit integration fuse stress)
    get_property(needs GLOBAL PROPERTY STRATA_LABEL_${label})
    add_custom_target(label_${label})
    if(needs)
      add_dependencies(label_${label} ${needs})
    endif()
  endforeach()
endfunction()

# strata_fuzz(NAME SOURCE f.cc LIBS ...): a libFuzzer target, built only with -DSTRATA_FUZZ=ON.
# Seeds live in fuzz/corpus/NAME in the source tree.
function(strata_fuzz name)
  cmake_parse_arguments(F "" "" "SOURCES;LIBS" ${ARGN})
  if(NOT STRATA_FUZZ)
    return()
  endif()
  add_executable(${name} ${F_SOURCES})
  target_link_libraries(${name} PRIVATE ${F_LIBS})
  # The static ASan runtime: libFuzzer's libstdc++ would come before a shared one, which ASan refuses.
  target_link_options(${name} PRIVATE -fsanitize=fuzzer -static-libsan)
  set_property(GLOBAL APPEND PROPERTY STRATA_FUZZ_TARGETS ${name})
  # scripts/test.sh reads the registered names from here (one per line), to build and run
  # each. The first registration of a configure run starts the file afresh.
  get_property(_started GLOBAL PROPERTY STRATA_FUZZ_LIST_STARTED)
  if(NOT _started)
    file(WRITE ${CMAKE_BINARY_DIR}/fuzz_targets.txt "")
    set_property(GLOBAL PROPERTY STRATA_FUZZ_LIST_STARTED TRUE)
  endif()
  file(APPEND ${CMAKE_BINARY_DIR}/fuzz_targets.txt "${name}\n")
endfunction()
