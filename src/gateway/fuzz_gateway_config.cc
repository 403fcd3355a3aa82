// libFuzzer target: arbitrary bytes as `strata serve`'s JSON config file (-c):
// the general settings, keys, grants, buckets and limits, then the checks
// that run before the gateway starts. The first line is also read as a
// listen address.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "gateway/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::gateway;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  GatewayConfig config;
  if (ParseGatewayConfigJson(in, &config).ok()) (void)ValidateGatewayConfig(config);
  std::string host;
  uint16_t port = 0;
  (void)ParseListenAddress(in.substr(0, in.find('\n')), &host, &port);
  return 0;
}
