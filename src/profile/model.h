// `strata profile`: what a command's file accesses would cost against an
// object store. Recording (record.cc) watches the given directories
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
// Through a strata mount the recording reads the mount's access log instead
// (fuse/access_log.h): every read with its offset and length, so bytes,
// sequential vs random share, read sizes, re-reads and the read timeline are
// exact (reads.cc).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace strata::profile {

struct FileRecord {
  std::string path;
  uint64_t size = 0;
  uint64_t opens = 0;              // exact (permission events)
  uint64_t read_opens = 0;         // opens followed by at least one read notification
  uint64_t read_events = 0;        // FAN_ACCESS notifications (merged by the kernel: a lower bound)
  uint64_t write_closes = 0;       // closed after writing
  double first_s = 0, last_s = 0;  // first and last open, seconds since the start
};

// One read as the strata mount served it (exact_reads only).
struct ReadEvent {
  uint32_t file = 0;    // index into ProfileData::files
  uint64_t open = 0;    // which open of the file (unique within the profile)
  uint64_t offset = 0;  // bytes
  uint64_t length = 0;  // bytes returned
  double t_s = 0;       // start, seconds since the profile's start
  double wait_s = 0;    // how long the mount took to answer
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
  // Through a strata mount's access log: every read, exact (files[i].opens
  // and read_opens are exact too).
  bool exact_reads = false;
  std::vector<std::string> mounts;  // the strata mount points read through
  std::vector<ReadEvent> reads;
  uint64_t bad_log_lines = 0;  // access log lines that did not parse (none expected)
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
// Analyze's JSON as charts in bench/plot.py's schema: file sizes, requests as
// files vs as shards, and for exact reads their sizes and timeline.
nlohmann::json Charts(const nlohmann::json& report);

// The exact-read part of the report (data.exact_reads): sequential vs random
// share, read sizes, re-reads, timeline, I/O wait; and the totals Analyze's
// request and verdict arithmetic uses.
struct ReadTotals {
  double bytes = 0, reread_bytes = 0, requests = 0, random_share = 0, median_read = 0;
};
nlohmann::json AnalyzeReads(const ProfileData& data, const AnalyzeOptions& options, ReadTotals* totals);

// Power-of-two size buckets: the smallest 2^k >= size (0 for empty files).
uint64_t BucketUpper(uint64_t size);

}  // namespace strata::profile
