// libFuzzer target: the XML parser and every S3 XML decoder on arbitrary bytes,
// plus an escape/parse round trip that must be exact.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "net/s3_xml.h"
#include "net/xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)strata::ParseXml(in);
  (void)strata::DecodeListObjectsV2(in);
  (void)strata::DecodeListAllMyBuckets(in);
  (void)strata::DecodeS3Error(in);
  (void)strata::DecodeInitiateMultipartUpload(in);
  (void)strata::DecodeCompleteMultipartUpload(in);
  (void)strata::DecodeCompleteMultipartUploadResult(in);
  (void)strata::DecodeListParts(in);
  (void)strata::DecodeDeleteRequest(in);
  (void)strata::DecodeListMultipartUploads(in);
  (void)strata::DecodeDeleteResult(in);
  (void)strata::DecodeCopyObjectResult(in);

  // Whatever text we escape must come back byte for byte (NUL cannot be represented in XML).
  if (in.find('\0') == std::string_view::npos) {
    strata::XmlWriter w;
    w.Open("R", {{"a", std::string(in)}}).Element("T", in);
    auto doc = strata::ParseXml(w.Finish());
    if (!doc.ok() || doc->ChildText("T") != in || *doc->Attribute("a") != in) std::abort();
  }
  // A decoded listing re-encodes into something that decodes to the same keys.
  auto list = strata::DecodeListObjectsV2(in);
  if (list.ok() && in.find('\0') == std::string_view::npos) {
    auto again = strata::DecodeListObjectsV2(strata::EncodeListObjectsV2(*list));
    if (list->encoding_type.empty() || list->encoding_type == "url") {
      if (!again.ok() || again->contents.size() != list->contents.size()) std::abort();
      for (size_t i = 0; i < list->contents.size(); ++i) {
        if (again->contents[i].key != list->contents[i].key) std::abort();
      }
    }
  }
  return 0;
}
