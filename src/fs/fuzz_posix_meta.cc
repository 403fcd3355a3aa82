// libFuzzer target: the POSIX attributes read from object metadata (written
// by any client: s3fs, rclone, a hostile one) never crash the mount, and
// what parses formats back to a value that parses to the same thing.
#include <cstdlib>
#include <string>
#include <string_view>

#include "fs/posix_meta.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> user = {{"mode", std::string(in)},
                                             {"uid", std::string(in)},
                                             {"gid", std::string(in)},
                                             {"mtime", std::string(in)},
                                             {"rdev", std::string(in)}};
  strata::fs::PosixMeta m = strata::fs::DecodePosixMeta(user);
  if (m.mtime) {
    auto again = strata::fs::ParseMtime(strata::fs::FormatMtime(*m.mtime));
    if (!again || *again != *m.mtime) std::abort();
  }
  std::map<std::string, std::string> out;
  strata::fs::EncodePosixMeta(m, &out);
  if (strata::fs::DecodePosixMeta(out) != m) std::abort();
  return 0;
}
