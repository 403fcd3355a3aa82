// The scheduler extender's HTTP endpoint: POST /filter and /prioritize with the
// scheduler's ExtenderArgs, answered from the cache group's records in etcd (read
// per request, so a member that left is gone from the next answer). GET /healthz.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace strata::csi {

struct ExtenderOptions {
  std::string listen = "127.0.0.1:8888";  // HOST:PORT (port 0: any; the bound one is logged)
  std::vector<std::string> cache_groups;  // etcd://HOST:PORT/GROUP, one or more
  double min_fraction = 0;                // filter: nodes holding less of the pod's cached data fail
};

// Serves until SIGINT/SIGTERM. Prints "listening on http://HOST:PORT" once bound.
Status RunExtender(const ExtenderOptions& options);

}  // namespace strata::csi
