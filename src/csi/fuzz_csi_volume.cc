// Fuzzes what the driver parses from outside: volume_context and secrets (from
// the CO), state records (from disk), mountinfo (from the kernel), and the
// scheduler extender's requests and member records.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "csi/extender.h"
#include "csi/mounts.h"
#include "csi/volume.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::csi;
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0: {
      auto r = ParseVolumeRecord(in);
      if (r.ok()) (void)ParseVolumeRecord(SerializeVolumeRecord(*r));
      break;
    }
    case 1: (void)ParseMountInfo(in); break;
    case 2: {
      auto s = ParseSecrets(in);
      StringMap ctx;
      size_t eq = in.find('=');
      ctx[std::string(in.substr(0, eq))] = std::string(eq == std::string_view::npos ? in : in.substr(eq + 1));
      (void)ParseVolumeContext(ctx);
      (void)s;
      break;
    }
    case 3: {
      auto a = ParseExtenderArgs(in);
      if (a.ok()) {
        ClusterCache cache;
        (void)AddMemberRecord(R"({"node":"n1","datasets":{"d":1}})", &cache);
        (void)FilterResponse(*a, cache, 0.5);
        (void)PrioritizeResponse(*a, cache);
      }
      break;
    }
    default: {
      ClusterCache cache;
      (void)AddMemberRecord(in, &cache);
      break;
    }
  }
  return 0;
}
