#include "io/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace strata::io {
namespace {

std::string Octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<std::string> ReadSecretFile(const std::string& path, const SecretRules& rules) {
  const std::string what(rules.what);
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (f.fd < 0) return ErrnoToStatus(errno, "cannot read " + what + " file " + path);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return ErrnoToStatus(errno, "cannot stat " + what + " file " + path);
  if (!S_ISREG(st.st_mode)) return InvalidArgumentError(what + " file " + path + " is not a regular file");
  if ((st.st_mode & 077) != 0) {
    return PermissionDeniedError(what + " file " + path + " may be read or written by group or others (mode " +
                                 Octal(st.st_mode) + "): chmod 600 " + path);
  }
  if (static_cast<uint64_t>(st.st_size) > rules.max_bytes) {
    return InvalidArgumentError(what + " file " + path + " holds " + std::to_string(st.st_size) + " bytes, more than " +
                                std::to_string(rules.max_bytes));
  }
  std::string s(rules.max_bytes + 1, '\0');
  size_t got = 0;
  while (got < s.size()) {
    ssize_t n = ::read(f.fd, s.data() + got, s.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, "cannot read " + what + " file " + path);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  s.resize(got);
  if (s.size() > rules.max_bytes) {
    return InvalidArgumentError(what + " file " + path + " holds more than " + std::to_string(rules.max_bytes) +
                                " bytes");
  }
  if (rules.text) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  }
  if (s.size() < rules.min_bytes) {
    return InvalidArgumentError(what + " in " + path + " is " + std::to_string(s.size()) + " bytes, fewer than " +
                                std::to_string(rules.min_bytes));
  }
  return s;
}

}  // namespace strata::io
