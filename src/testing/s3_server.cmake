# Real S3 servers and subprocesses for integration tests (owned by the infra work; included
# by testing/CMakeLists.txt).
target_sources(strata_testing PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/s3_server.cc
  ${CMAKE_CURRENT_LIST_DIR}/subprocess.cc
  ${CMAKE_CURRENT_LIST_DIR}/background_process.cc)
# Where the scripts live when STRATA_SOURCE_DIR is not set (a test binary run by hand).
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/s3_server.cc PROPERTIES
  COMPILE_DEFINITIONS "STRATA_SOURCE_DIR_DEFAULT=\"${CMAKE_SOURCE_DIR}\"")

strata_test(subprocess_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/subprocess_test.cc
  LIBS strata_testing LABELS unit TIMEOUT 60)
strata_test(s3_server_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/s3_server_test.cc
  LIBS strata_testing LABELS integration TIMEOUT 600)
strata_test(background_process_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/background_process_test.cc
  LIBS strata_testing LABELS unit TIMEOUT 60)
