// `strata profile`: what a command's file accesses would cost against an
// object store. Recording (profile_record.cc) watches the given directories
// with fanotify and counts, per file, the opens of the command's process tree
// and the read notifications; the analysis here (pure, no I/O) turns those
// counts into the report and a verdict.
//
// What fanotify can and cannot tell (the report says so too):
// - Opens are exact: they are permission events (FAN_OPEN_PERM), which the
//   kernel never merges; each open waits for the profiler's answer (the
//   measured overhead is in the README).
// - Reads are FAN_ACCESS notifications, which the kernel merges while they
//   wait in the queue and which carry no offset or length. Bytes are
//   therefore estimated: every open followed by a read counts the file's
//   whole size. mmap'd reads raise no event at all.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace strata::cli::profile {

struct FileRecord {
  std::string path;
  uint64_t size = 0;
  uint64_t opens = 0;              // exact (permission events)
  uint64_t read_opens = 0;         // opens followed by at least one read notification
  uint64_t read_events = 0;        // FAN_ACCESS notifications (merged by the kernel: a lower bound)
  uint64_t write_closes = 0;       // closed after writing
  double first_s = 0, last_s = 0;  // first and last open, seconds since the start
};

struct ProfileData {
  std::vector<std::string> command;
  std::vector<std::string> paths;
  std::vector<FileRecord> files;
  double duration_s = 0;
  int exit_code = 0;
  bool interrupted = false;           // Ctrl-C or --duration ended it
  double cpu_s = 0;                   // user + system time of the process tree
  uint64_t other_process_events = 0;  // events from processes outside the tree (ignored)
  uint64_t events = 0;
  uint64_t queue_overflows = 0;  // the kernel's queue overflowed: events were lost
  double profiler_cpu_s = 0;     // the profiler's own CPU time while recording
};

struct AnalyzeOptions {
  double shard_bytes = 256.0 * (1 << 20);
  double request_bytes = 16.0 * (1 << 20);  // ranged GETs of large files and shards
};

// The report as JSON (`strata profile --json`; `strata plan --from-profile`
// reads files, unique_bytes, opens_per_s and size_histogram).
nlohmann::json Analyze(const ProfileData& data, const AnalyzeOptions& options = {});
// The terminal report from Analyze's JSON.
std::string FormatProfile(const nlohmann::json& report);

// Power-of-two size buckets: the smallest 2^k >= size (0 for empty files).
uint64_t BucketUpper(uint64_t size);

}  // namespace strata::cli::profile
