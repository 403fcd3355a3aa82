// Secrets at rest in the state dir, sealed: AES-256-GCM under a key the driver
// reads from a file outside the state dir (a Kubernetes Secret mounted into the
// plugin), bound to the volume id. With it, a driver started after its mounts died
// (a container restart takes them with it) remounts them; without it, secrets live
// only in memory and in each mount's memfd.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "csi/volume.h"

namespace strata::csi {

// The key file holds 64 hex characters (`openssl rand -hex 32`), a trailing newline allowed.
Result<std::string> ReadSealKey(const std::string& path);

// base64(12-byte nonce || ciphertext || 16-byte tag); `volume_id` is authenticated with it.
Result<std::string> SealSecrets(const StringMap& secrets, const std::string& key, const std::string& volume_id);
// Corruption when the blob was altered, sealed for another volume or under another key.
Result<StringMap> UnsealSecrets(std::string_view sealed, const std::string& key, const std::string& volume_id);

}  // namespace strata::csi
