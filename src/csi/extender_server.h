// The scheduler extender's HTTP endpoint: POST /filter and /prioritize with the
// scheduler's ExtenderArgs, answered from the cache group's records in etcd (read
// per request, so a member that left is gone from the next answer). GET /healthz,
// GET /metrics (Prometheus text). Only records signed with the group's secret
// (group/member_record.h) count: one unsigned, forged or expired is ignored, logged
// and counted (strata_extender_records_refused_total), so a writer to etcd without
// the secret cannot draw pods to a node. A connection that sends nothing for
// idle_timeout (no request started, or one stalled mid-way) is closed; past
// max_connections open at once, a new one is closed at once (each holds a thread).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"

namespace strata::csi {

struct ExtenderOptions {
  std::string listen = "127.0.0.1:8888";  // HOST:PORT (port 0: any; the bound one is logged)
  std::vector<std::string> cache_groups;  // etcd://HOST:PORT/GROUP, one or more
  // The groups' secrets (group::ReadGroupSecret): one for every group, or one per group in order.
  std::vector<std::string> group_secrets;
  double min_fraction = 0;  // filter: nodes holding less of the pod's cached data fail
  std::chrono::milliseconds idle_timeout{60000};
  int max_connections = 64;  // the scheduler keeps one or two open
};

// Serves until SIGINT/SIGTERM. Prints "listening on http://HOST:PORT" once bound.
Status RunExtender(const ExtenderOptions& options);

}  // namespace strata::csi
