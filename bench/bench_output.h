// What every benchmark does last: its JSON results into the file named by --out.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "io/durable.h"
#include "io/file_system.h"

namespace strata::bench {

// Writes `results` to `path`, creating its directories (a bare name lands in the working
// directory). False, with the reason on stderr, when that fails: a bad --out is an error
// message and a non-zero exit, not an uncaught exception.
inline bool WriteResultsJson(const char* bench, const std::string& path, const nlohmann::json& results) {
  const Status wrote = io::WriteFileAtomicCreatingDirs(io::DefaultFileSystem(), path, results.dump(2) + "\n");
  if (wrote.ok()) return true;
  std::fprintf(stderr, "%s: cannot write the results: %s\n", bench, wrote.ToString().c_str());
  return false;
}

}  // namespace strata::bench
