// libFuzzer target: XML request bodies as the gateway parses them (a
// DeleteObjects, a CompleteMultipartUpload, any document), kept apart from
// fuzz_xml so its seeds can be long: runs of the constructs the parser's
// pre-passes scan ("&#", '<', '=', quotes). Work must stay linear in the
// input, so libFuzzer's -timeout is the assertion: the seed
// delete_amp_hash_run.xml (1 MiB) took 5 s per parse when the control-
// reference pre-pass searched to the end after every "&#".
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "net/s3_xml.h"
#include "net/xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)strata::net::ParseXml(in);
  (void)strata::net::DecodeDeleteRequest(in);
  (void)strata::net::DecodeCompleteMultipartUpload(in);
  return 0;
}
