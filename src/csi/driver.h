// `strata csi`: the CSI driver's gRPC server (Identity, Node, Controller on one
// unix socket, package csi.v1 as the spec defines it). This header carries no
// gRPC: front ends call RunDriver and never compile gRPC or protobuf headers.
#pragma once

#include <string>

#include "base/status.h"
#include "csi/node.h"

namespace strata::csi {

inline constexpr const char* kDriverName = "csi.strata.dev";

struct DriverOptions {
  std::string endpoint = "unix:///csi/csi.sock";  // unix:///path (a stale socket file is replaced)
  bool node = true;                               // serve the Node service (the DaemonSet)
  bool controller = true;                         // serve the Controller service (the provisioner's Deployment)
  NodeOptions node_options;
  std::string version;  // vendor_version
};

// Serves until SIGINT or SIGTERM (blocked here before any thread starts, then
// awaited); the mounts stay up. Errors: the socket cannot be bound, the state
// dir cannot be opened.
Status RunDriver(const DriverOptions& options);

}  // namespace strata::csi
