// A file system of a known size for tests of free-space floors: the real
// one (through FaultFileSystem, so faults still apply), reporting `size`
// bytes of which the files under `dir` and `others` (files of other
// programs, set by the test) are used. Header-only; link strata_io.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

#include "io/fault_file_system.h"

namespace strata::testing {

class SmallDisk : public io::FaultFileSystem {
 public:
  SmallDisk(std::string dir, uint64_t size)
      : io::FaultFileSystem(io::DefaultFileSystem()), dir_(std::move(dir)), size_(size) {}

  Result<io::SpaceInfo> Space(const std::string&) override {
    const uint64_t used = DirBytes() + others.load();
    return io::SpaceInfo{.total = size_, .available = used < size_ ? size_ - used : 0};
  }
  // The bytes of the files under `dir` now (files vanishing meanwhile are skipped).
  uint64_t DirBytes() const {
    namespace fs = std::filesystem;
    uint64_t used = 0;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code file_ec;
      if (!it->is_regular_file(file_ec)) continue;
      const uint64_t n = it->file_size(file_ec);
      if (!file_ec) used += n;
    }
    return used;
  }
  uint64_t size() const { return size_; }

  std::atomic<uint64_t> others{0};

 private:
  const std::string dir_;
  const uint64_t size_;
};

}  // namespace strata::testing
