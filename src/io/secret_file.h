// Secrets kept in files (a cache group's secret, a cache encryption key).
// A file that its group or other users may read or write is refused, as ssh
// refuses such a private key: a secret that leaked through a loose mode would
// not be one, and nobody would notice. Symlinks are followed (Kubernetes
// mounts Secrets through them); the file itself must be a regular file.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace strata::io {

struct SecretRules {
  std::string_view what{};  // names the secret in errors: "the group secret"
  size_t min_bytes = 1;     // after trailing newlines are dropped (text secrets)
  size_t max_bytes = 4096;  // a larger file is not a secret of ours
  bool text = true;         // drop trailing "\n" / "\r\n"; false: the bytes as they are (binary keys)
};

// The secret in `path`. PermissionDenied for a file readable or writable by
// group or others (the message says which chmod fixes it); InvalidArgument
// for one shorter than min_bytes or longer than max_bytes; NotFound or
// IOError when it cannot be read. Errors never contain the secret's bytes.
Result<std::string> ReadSecretFile(const std::string& path, const SecretRules& rules);

}  // namespace strata::io
