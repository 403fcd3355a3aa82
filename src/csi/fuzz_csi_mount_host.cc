// Fuzzes what the mount host parses from its socket (a plugin's request) and
// what the plugin parses back (the host's answer); a request that parses is
// formatted and parsed again to the same launch.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "csi/mount_host.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::csi;
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    auto launch = ParseMountHostRequest(in);
    if (launch.ok()) {
      auto text = FormatMountHostRequest(*launch);
      if (!text.ok()) std::abort();  // what parsed is UTF-8 and formats again
      auto again = ParseMountHostRequest(*text);
      if (!again.ok() || again->url != launch->url || again->mountpoint != launch->mountpoint ||
          again->args != launch->args || again->timeout != launch->timeout) {
        std::abort();
      }
    }
  } else {
    auto outcome = ParseMountHostAnswer(in);
    (void)FormatMountHostAnswer(outcome);
  }
  return 0;
}
