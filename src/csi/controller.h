// The controller side of the driver without gRPC: dynamic provisioning gives
// each claim its own prefix under a StorageClass's base URL. CreateVolume checks
// the bucket answers with the request's secrets and returns the claim's URL as
// the volume id (idempotent: the same name gives the same id); DeleteVolume
// deletes every object under that prefix (a StorageClass with
// reclaimPolicy: Retain never calls it, so the data stays). Thread-safe.
#pragma once

#include <string>

#include "base/status.h"
#include "csi/volume.h"
#include "object/object_store.h"

namespace strata::csi {

struct CreatedVolume {
  std::string volume_id;
  StringMap context;
};

// `parameters`: the StorageClass's (url = the base, the rest as in
// ParseVolumeContext); keys under csi.storage.k8s.io/ are the CO's and dropped.
Result<CreatedVolume> CreateVolume(const std::string& name, const StringMap& parameters, const StringMap& secrets);
// OK when the prefix is already empty. InvalidArgument for an id that is not a
// claim URL (no prefix: the whole bucket is never deleted).
Status DeleteVolume(const std::string& volume_id, const StringMap& secrets);
// Whether `volume_id` names a volume this driver could have created.
Status CheckVolumeId(const std::string& volume_id);

// The store at `url` with credentials from `secrets` first, then the process's
// usual sources (AWS_* variables, ~/.aws).
Result<object::ObjectStorePtr> OpenStoreWithSecrets(const std::string& url, const StringMap& secrets);

}  // namespace strata::csi
