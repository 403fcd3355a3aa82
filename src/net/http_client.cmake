# The libcurl HTTP client (included by net/CMakeLists.txt).
target_sources(strata_net PRIVATE ${CMAKE_CURRENT_LIST_DIR}/http_client.cc)
target_link_libraries(strata_net PUBLIC CURL::libcurl)

strata_test(http_client_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/http_client_test.cc
  LIBS strata_net LABELS unit TIMEOUT 120)
