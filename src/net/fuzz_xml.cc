// libFuzzer target: the XML parser and every S3 XML decoder on arbitrary bytes,
// plus an escape/parse round trip that must be exact.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "net/s3_xml.h"
#include "net/xml.h"

namespace {

// Whether `s` is text XML can carry: valid UTF-8 of XML characters (no NUL,
// surrogates, U+FFFE or U+FFFF); other C0 controls go as references.
bool IsXmlText(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < n; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 0x2) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF) return false;
    i += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)strata::net::ParseXml(in);
  (void)strata::net::DecodeListObjectsV2(in);
  (void)strata::net::DecodeListAllMyBuckets(in);
  (void)strata::net::DecodeS3Error(in);
  (void)strata::net::DecodeInitiateMultipartUpload(in);
  (void)strata::net::DecodeCompleteMultipartUpload(in);
  (void)strata::net::DecodeCompleteMultipartUploadResult(in);
  (void)strata::net::DecodeListParts(in);
  (void)strata::net::DecodeDeleteRequest(in);
  (void)strata::net::DecodeListMultipartUploads(in);
  (void)strata::net::DecodeDeleteResult(in);
  (void)strata::net::DecodeCopyObjectResult(in);

  // Whatever text we escape must come back byte for byte (when XML can carry it at all).
  if (IsXmlText(in)) {
    strata::net::XmlWriter w;
    w.Open("R", {{"a", std::string(in)}}).Element("T", in);
    auto doc = strata::net::ParseXml(w.Finish());
    if (!doc.ok() || doc->ChildText("T") != in || *doc->Attribute("a") != in) std::abort();
  }
  // A decoded listing re-encodes into something that decodes to the same keys.
  auto list = strata::net::DecodeListObjectsV2(in);
  if (list.ok() && IsXmlText(in)) {
    auto again = strata::net::DecodeListObjectsV2(strata::net::EncodeListObjectsV2(*list));
    if (list->encoding_type.empty() || list->encoding_type == "url") {
      if (!again.ok() || again->contents.size() != list->contents.size()) std::abort();
      for (size_t i = 0; i < list->contents.size(); ++i) {
        if (again->contents[i].key != list->contents[i].key) std::abort();
      }
    }
  }
  return 0;
}
