# The S3 client (owned by the s3 work; included by object/CMakeLists.txt).
target_sources(strata_object PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/s3_config.cc
  ${CMAKE_CURRENT_LIST_DIR}/s3_metadata.cc
  ${CMAKE_CURRENT_LIST_DIR}/s3_part_range.cc
  ${CMAKE_CURRENT_LIST_DIR}/s3_request.cc
  ${CMAKE_CURRENT_LIST_DIR}/s3_service.cc
  ${CMAKE_CURRENT_LIST_DIR}/s3_store.cc)
target_link_libraries(strata_object PUBLIC strata_net)

strata_test(s3_config_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/s3_config_test.cc
  LIBS strata_object LABELS unit)

strata_fuzz(fuzz_aws_ini
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_aws_ini.cc
  LIBS strata_object)

strata_test(s3_store_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/s3_store_test.cc
  LIBS strata_object LABELS unit TIMEOUT 120)

# Real servers (s3rver, Ceph RGW) and real clients (aws CLI, boto3).
strata_test(s3_integration_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/s3_integration_test.cc
  LIBS strata_object strata_testing LABELS integration TIMEOUT 1200)
# Conformance cases the servers themselves fail (not the client), checked by hand with the aws
# CLI / boto3 and listed in shared/notes/s3-servers.md:
#  s3rver: drops common prefixes and mis-sorts/mis-pages listings with a delimiter, multipart
#          ETags are not md5-N, Complete does not validate part ETags, Abort answers 405;
#  RGW 16: Complete with a subset of the uploaded parts answers InvalidPart.
if(TARGET s3_integration_test)
  set_property(TEST s3_integration_test APPEND PROPERTY ENVIRONMENT
    "GTEST_FILTER=-*ListPrefixAndDelimiter/s3_on_s3rver:*ListIsInByteOrder/s3_on_s3rver:*PaginationWithCommonPrefixes/s3_on_s3rver:*MultipartComplete/s3_on_s3rver:*MultipartAbort/s3_on_s3rver:*MultipartRejectsTooSmallAndWrongParts/s3_on_s3rver:*MultipartRejectsTooSmallAndWrongParts/s3_on_rgw")
endif()
